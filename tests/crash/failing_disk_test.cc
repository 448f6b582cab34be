// A failing disk under the real streamd (docs/RELIABILITY.md §"A failing disk"): the daemon runs on the
// power-cut filesystem (tests/powercut), whose next fsyncs of one partition's files return EIO. The
// waiting append fails STREAM_BACKEND_FAILED, the partition is fenced (no later append is acknowledged,
// even once the disk answers again: the kernel may have dropped the pages that fsync did not write),
// the other partitions keep working, /readyz and /metrics name it, and a restart recovers it.
// Reads of one segment that return EIO fail those reads only: nothing is fenced, the daemon lives, and
// the segment reads again once the disk does.
// Skipped, saying why, where FUSE cannot be mounted.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "tests/integration/wire_client.h"
#include "tests/powercut/powercut_fs.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using powercut::Fault;
using powercut::FaultOp;
using powercut::PowerCutFs;
using testing::TestRecord;
using testing::WireClient;

v1::Response append(WireClient& client, const std::string& stream, const std::string& payload) {
  return client.call(testing::append_request(stream, {TestRecord{"k", payload, {}}}));
}

// The payloads of partition 0 of `stream`, from offset 0.
std::vector<std::string> payloads(WireClient& client, const std::string& stream) {
  v1::Response r = client.call(testing::read_request(stream, {{0, 0}}));
  std::vector<std::string> out;
  if (!r.has_read()) return out;
  for (const auto& p : r.read().partitions()) {
    for (const auto& e : p.entries()) out.push_back(e.record().payload());
  }
  return out;
}

// The power-cut filesystem mounted on a temp dir and streamd started on it; `ok` is false (with a
// WARN saying why) where FUSE cannot be mounted. `args` are more streamd flags.
struct DaemonOnPowerCutFs {
  explicit DaemonOnPowerCutFs(std::vector<std::string> args = {}) : daemon(with_data_dir(std::move(args))) {
    if (std::string why = PowerCutFs::unavailable_reason(); !why.empty()) {
      WARN("skipped: " << why);
      return;
    }
    std::filesystem::create_directory(mnt);
    std::string error;
    fs = PowerCutFs::mount(mnt, &error);
    INFO(error);
    REQUIRE(fs != nullptr);
    REQUIRE(daemon.start(std::chrono::seconds(30)));
    ok = true;
  }
  std::vector<std::string> with_data_dir(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--data-dir", mnt + "/data"});
    return args;
  }
  testing::TempDir dir;
  const std::string mnt = dir.file("mnt");
  std::unique_ptr<PowerCutFs> fs;
  testing::DaemonProcess daemon;
  bool ok = false;
};

TEST_CASE("a failed fsync fences its partition only, /readyz and /metrics name it, and a restart recovers it",
          "[crash][disk]") {
  // Without the journal each partition syncs its own segment, so the fault meets that partition's sync.
  DaemonOnPowerCutFs on({"--storage.journal-group-bytes", "0"});
  if (!on.ok) return;
  auto& fs = on.fs;
  auto& daemon = on.daemon;
  {
    WireClient client(daemon.port());
    REQUIRE(client.call(testing::create_request("sick")).has_create_stream());
    REQUIRE(client.call(testing::create_request("well")).has_create_stream());
    REQUIRE(append(client, "sick", "before").has_append());
    REQUIRE(append(client, "well", "before").has_append());

    fs->add_fault(Fault{FaultOp::kFsync, EIO, "/streams/sick/", -1});
    CHECK(testing::error_name(append(client, "sick", "during")) == "STREAM_BACKEND_FAILED");
    CHECK(fs->faults_injected() >= 1);
    // The disk answers again, but what the failed fsync did not write may be gone: still fenced.
    fs->clear_faults();
    CHECK(testing::error_name(append(client, "sick", "after")) == "STREAM_BACKEND_FAILED");
    CHECK(append(client, "well", "after").has_append());
    CHECK(payloads(client, "well") == std::vector<std::string>{"before", "after"});
    const auto sick = payloads(client, "sick");
    REQUIRE_FALSE(sick.empty());
    CHECK(sick.front() == "before");

    const auto ready = daemon.http_get("/readyz");
    CHECK(ready.status == 503);
    CHECK(ready.body.find("degraded") != std::string::npos);
    CHECK(ready.body.find(" sick/0") != std::string::npos);
    CHECK(ready.body.find("well") == std::string::npos);
    const auto metrics = testing::parse_prometheus_text(daemon.http_get("/metrics").body);
    INFO(metrics.error);
    REQUIRE(metrics.exposition);
    CHECK(metrics.exposition->value("streamd_partitions_failed") == 1.0);
    CHECK(metrics.exposition->value("streamd_partition_failed", {{"stream", "sick"}, {"partition", "0"}}) == 1.0);
    // Without metrics.per_partition only fenced partitions have a series.
    CHECK_FALSE(metrics.exposition->value("streamd_partition_failed", {{"stream", "well"}, {"partition", "0"}}));
  }
  daemon.kill9();
  REQUIRE(daemon.start(std::chrono::seconds(30)));
  WireClient client(daemon.port());
  CHECK(append(client, "sick", "recovered").has_append());
  const auto sick = payloads(client, "sick");
  REQUIRE_FALSE(sick.empty());
  CHECK(sick.front() == "before");
  CHECK(sick.back() == "recovered");
  CHECK(daemon.http_get("/readyz").status == 200);
  daemon.kill9();
}

// One partition's read from `from`, up to 1000 records.
v1::PartitionRead read_partition(WireClient& client, const std::string& stream, int32_t partition, uint64_t from) {
  v1::Response r = client.call(testing::read_request(stream, {{partition, from}}));
  if (!r.has_read() || r.read().partitions_size() != 1) return {};
  return r.read().partitions(0);
}

std::vector<std::string> payloads_of(const v1::PartitionRead& read) {
  std::vector<std::string> out;
  for (const auto& e : read.entries()) out.push_back(e.record().payload());
  return out;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Stream "disk" of two partitions in segments of 4 KiB, so that each partition's first records lie in
// a closed segment of their own; 120 records of ~300 B appended, keyed so both partitions take some.
struct TwoPartitions {
  explicit TwoPartitions(WireClient& client) {
    v1::Request create = testing::create_request("disk", 2);
    create.mutable_create_stream()->mutable_policy()->set_segment_bytes(4096);
    REQUIRE(client.call(create).has_create_stream());
    for (int i = 0; i < 120; ++i) {
      const std::string key = "k" + std::to_string(i);
      const std::string payload = std::to_string(i) + std::string(300, 'x');
      v1::Response r = client.call(testing::append_request("disk", {TestRecord{key, payload, {}}}));
      REQUIRE(r.has_append());
      stored[r.append().partition()].push_back(payload);
      key_of.emplace(r.append().partition(), key);
    }
    REQUIRE(stored.size() == 2);
    REQUIRE(stored[0].size() > 20);
    REQUIRE(stored[1].size() > 20);
  }
  std::map<int32_t, std::vector<std::string>> stored;
  std::map<int32_t, std::string> key_of;
};

// The files of partition 0's first, closed segment, under the data directory.
const std::string kFirstSegment = "/streams/disk/0/00000000000000000000";

TEST_CASE("a failed fsync of the journal fences nothing: partitions sync their own segments, and a power cut "
          "keeps every acknowledged append", "[crash][disk]") {
  DaemonOnPowerCutFs on;
  if (!on.ok) return;
  auto& fs = on.fs;
  auto& daemon = on.daemon;
  {
    WireClient client(daemon.port());
    REQUIRE(client.call(testing::create_request("s")).has_create_stream());
    REQUIRE(append(client, "s", "before").has_append());
    fs->add_fault(Fault{FaultOp::kFsync, EIO, "/journal/", -1});
    REQUIRE(append(client, "s", "during").has_append());
    CHECK(fs->faults_injected() >= 1);
    fs->clear_faults();
    REQUIRE(append(client, "s", "after").has_append());
    CHECK(payloads(client, "s") == std::vector<std::string>{"before", "during", "after"});
    CHECK(daemon.http_get("/readyz").status == 200);
  }
  fs->cut(powercut::CutMode::kDiscard, 1);
  daemon.kill9();
  std::string error;
  REQUIRE(fs->restore(&error));
  REQUIRE(daemon.start(std::chrono::seconds(30)));
  WireClient client(daemon.port());
  CHECK(payloads(client, "s") == std::vector<std::string>{"before", "during", "after"});
}

TEST_CASE("a read meeting EIO fails that read only: other reads and appends go on, nothing is fenced, the daemon "
          "lives", "[crash][disk]") {
  DaemonOnPowerCutFs on;
  if (!on.ok) return;
  auto& fs = on.fs;
  auto& daemon = on.daemon;
  WireClient client(daemon.port());
  TwoPartitions disk(client);
  auto& stored = disk.stored;
  const std::string segment = kFirstSegment + ".log";
  REQUIRE(std::filesystem::exists(on.mnt + "/data" + segment));

  fs->add_fault(Fault{FaultOp::kRead, EIO, segment, -1});
  for (int attempt = 0; attempt < 2; ++attempt) {
    const v1::PartitionRead failed = read_partition(client, "disk", 0, 0);
    CHECK(failed.error().name() == "STREAM_BACKEND_FAILED");
    CHECK(failed.error().fields().at("errno") == std::to_string(EIO));
    CHECK(failed.error().fields().at("stream") == "disk");
    CHECK(failed.entries_size() == 0);
  }
  CHECK(fs->faults_injected() >= 1);
  // The partition's later segments still read, the other partition reads whole, both take appends.
  const uint64_t last = stored[0].size() - 1;
  CHECK(payloads_of(read_partition(client, "disk", 0, last)) == std::vector<std::string>{stored[0].back()});
  CHECK(payloads_of(read_partition(client, "disk", 1, 0)) == stored[1]);
  for (int32_t p : {0, 1}) {
    v1::Response r = client.call(testing::append_request("disk", {TestRecord{disk.key_of[p], "during", {}}}));
    REQUIRE(r.has_append());
    CHECK(r.append().partition() == p);
    stored[p].push_back("during");
  }
  CHECK(::kill(daemon.pid(), 0) == 0);
  CHECK(daemon.http_get("/readyz").status == 200);
  // Logged once for the segment, not once per failed read.
  CHECK(count_of(daemon.log(), "a read of segment") == 1);

  fs->clear_faults();
  CHECK(payloads_of(read_partition(client, "disk", 0, 0)) == stored[0]);
  CHECK(payloads_of(read_partition(client, "disk", 1, 0)) == stored[1]);
  CHECK(count_of(daemon.log(), "reads again") == 1);
  daemon.kill9();
}

// Partition 0's offset for `time_us`, or nullopt when the broker answered anything else.
std::optional<uint64_t> offset_at(WireClient& client, int64_t time_us) {
  v1::Request at;
  at.mutable_offset_at()->set_stream("disk");
  at.mutable_offset_at()->set_partition(0);
  at.mutable_offset_at()->set_time_us(time_us);
  v1::Response r = client.call(at);
  if (!r.has_offset_at()) return std::nullopt;
  return r.offset_at().offset();
}

TEST_CASE("index pages the disk cannot return cost a longer scan, never the daemon, and a restart makes them anew",
          "[crash][disk]") {
  DaemonOnPowerCutFs on;
  if (!on.ok) return;
  auto& fs = on.fs;
  auto& daemon = on.daemon;
  auto client = std::make_unique<WireClient>(daemon.port());
  TwoPartitions disk(*client);
  const auto& stored = disk.stored;
  const v1::PartitionRead whole = read_partition(*client, "disk", 0, 0);
  REQUIRE(payloads_of(whole) == stored.at(0));
  const int64_t fifth_at = whole.entries(5).appended_at_us();
  REQUIRE(offset_at(*client, fifth_at) == 5u);

  // Touching a mapped page the disk fails raises SIGBUS (tests/powercut): the lookups through both
  // indexes of the first segment must give up on them and scan the log instead.
  for (const char* ext : {".index", ".timeindex"}) fs->add_fault(Fault{FaultOp::kRead, EIO, kFirstSegment + ext, -1});
  for (uint64_t from : {0u, 3u, 7u}) {
    INFO("from " << from);
    const std::vector<std::string> want(stored.at(0).begin() + static_cast<std::ptrdiff_t>(from), stored.at(0).end());
    CHECK(payloads_of(read_partition(*client, "disk", 0, from)) == want);
  }
  CHECK(offset_at(*client, fifth_at) == 5u);
  CHECK(fs->faults_injected() >= 1);
  CHECK(::kill(daemon.pid(), 0) == 0);
  CHECK(client->call(testing::append_request("disk", {TestRecord{disk.key_of.at(0), "during", {}}})).has_append());

  // A restart while the disk still fails them replaces both files and rebuilds them from the log.
  client.reset();
  daemon.kill9();
  REQUIRE(daemon.start(std::chrono::seconds(30)));
  CHECK(count_of(daemon.log(), "could not return its index pages") == 1);
  client = std::make_unique<WireClient>(daemon.port());
  std::vector<std::string> want = stored.at(0);
  want.push_back("during");
  CHECK(payloads_of(read_partition(*client, "disk", 0, 0)) == want);
  CHECK(offset_at(*client, fifth_at) == 5u);
  fs->clear_faults();
  CHECK(payloads_of(read_partition(*client, "disk", 0, 3)) == std::vector<std::string>(want.begin() + 3, want.end()));
  daemon.kill9();
}

}  // namespace
}  // namespace streamd
