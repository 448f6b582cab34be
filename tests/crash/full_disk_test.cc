// A full disk under the real streamd (docs/RELIABILITY.md §"A full disk"): the daemon runs on a small
// ext4 the test makes in a file, loop-mounts (with no blocks reserved for root, which the daemon runs
// as here) and fills by appends. While it is full, appends are refused with a clear error, nothing
// acknowledged is lost, reads, describe and the other streams' reads go on, and the failed metadata
// writes (a create, commits) leave no half-written file; the partition is not fenced. A trim, then a
// stream's delete, free space, and appends are taken again without a restart. Skipped, saying what is
// missing, where a loop device cannot be mounted (not root, no loop driver, no mkfs.ext4).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/integration/wire_client.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::TestRecord;
using testing::WireClient;

constexpr uint64_t kDiskBytes = 48ull << 20;
constexpr size_t kPayloadBytes = 192 << 10;
constexpr int64_t kSegmentBytes = 1 << 20;

// Runs a shell command; its exit status, and its output in `out`.
int run(const std::string& command, std::string* out = nullptr) {
  std::string text;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) text += buf;
  const int status = ::pclose(p);
  if (out != nullptr) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// An ext4 of kDiskBytes in `image`, loop-mounted on `mount_point` for the test's lifetime.
class LoopDisk {
 public:
  LoopDisk(std::string image, std::string mount_point) : image_(std::move(image)), mount_(std::move(mount_point)) {}
  ~LoopDisk() {
    if (mounted_) (void)run("umount '" + mount_ + "'");
  }
  LoopDisk(const LoopDisk&) = delete;
  LoopDisk& operator=(const LoopDisk&) = delete;

  // Empty when mounted; otherwise what is missing.
  std::string mount() {
    if (::geteuid() != 0) return "mounting a loop device needs root";
    if (run("command -v mkfs.ext4") != 0) return "mkfs.ext4 (e2fsprogs) is not installed";
    if (!std::filesystem::exists("/dev/loop-control")) return "no loop device driver (/dev/loop-control)";
    std::string out;
    if (run("truncate -s " + std::to_string(kDiskBytes) + " '" + image_ + "'", &out) != 0) return "truncate: " + out;
    // -m 0: no blocks reserved for root, so that the daemon (root here) meets the full disk too.
    if (run("mkfs.ext4 -q -F -m 0 '" + image_ + "'", &out) != 0) return "mkfs.ext4: " + out;
    std::filesystem::create_directories(mount_);
    if (run("mount -o loop '" + image_ + "' '" + mount_ + "'", &out) != 0) return "mount -o loop: " + out;
    mounted_ = true;
    return "";
  }

 private:
  const std::string image_;
  const std::string mount_;
  bool mounted_ = false;
};

std::string payload_of(const std::string& stream, uint64_t n) {
  std::string p = stream + "-" + std::to_string(n) + "-";
  p.resize(kPayloadBytes, static_cast<char>('a' + n % 26));
  return p;
}

v1::Response append_unkeyed(WireClient& client, const std::string& stream, const std::string& payload) {
  return client.call(testing::append_request(stream, {TestRecord{"", payload, {}}}));
}

v1::Request create_of(const std::string& stream) {
  v1::Request request = testing::create_request(stream);
  request.mutable_create_stream()->mutable_policy()->set_segment_bytes(kSegmentBytes);
  return request;
}

v1::Request trim_of(const std::string& stream, uint64_t before) {
  v1::Request request;
  request.mutable_trim()->set_stream(stream);
  request.mutable_trim()->set_before(before);
  return request;
}

v1::Request commit_of(const std::string& stream, uint64_t next) {
  v1::Request request;
  request.mutable_commit()->set_stream(stream);
  request.mutable_commit()->set_group("g");
  request.mutable_commit()->set_next(next);
  return request;
}

v1::Request committed_of(const std::string& stream) {
  v1::Request request;
  request.mutable_committed()->set_stream(stream);
  request.mutable_committed()->set_group("g");
  return request;
}

v1::Request describe_of(const std::string& stream) {
  v1::Request request;
  request.mutable_describe_stream()->set_name(stream);
  return request;
}

v1::Request delete_of(const std::string& stream) {
  v1::Request request;
  request.mutable_delete_stream()->set_name(stream);
  return request;
}

bool no_space(const v1::Response& r) {
  return testing::error_name(r) == "STREAM_BACKEND_FAILED" &&
         r.error().message().find("no space left on the device") != std::string::npos &&
         r.error().fields().count("errno") > 0;
}

// Appends to `stream` until the disk refuses; records each acknowledged payload by offset. Returns
// the refusal.
v1::Response fill(WireClient& client, const std::string& stream, std::map<uint64_t, std::string>& acked) {
  for (uint64_t n = acked.size(); n < 2 * kDiskBytes / kPayloadBytes; ++n) {
    const std::string payload = payload_of(stream, n);
    v1::Response r = append_unkeyed(client, stream, payload);
    if (!r.has_append()) return r;
    acked[r.append().first()] = payload;
  }
  FAIL("the disk never filled");
  return {};
}

// Every record of partition 0 from `from` on, by offset.
std::map<uint64_t, std::string> read_from(WireClient& client, const std::string& stream, uint64_t from) {
  std::map<uint64_t, std::string> out;
  for (;;) {
    v1::Response r = client.call(testing::read_request(stream, {{0, from}}, 64));
    REQUIRE(r.has_read());
    REQUIRE(r.read().partitions_size() == 1);
    const auto& p = r.read().partitions(0);
    REQUIRE_FALSE(p.has_error());
    if (p.entries_size() == 0) return out;
    for (const auto& e : p.entries()) out[e.offset()] = e.record().payload();
    from = p.next_from();
  }
}

// The acknowledged records from `first` on are all there, whole.
void check_kept(WireClient& client, const std::string& stream, const std::map<uint64_t, std::string>& acked,
                uint64_t first) {
  const auto found = read_from(client, stream, first);
  size_t expected = 0;
  for (const auto& [offset, payload] : acked) {
    if (offset < first) continue;
    ++expected;
    auto it = found.find(offset);
    INFO("offset " << offset);
    REQUIRE(it != found.end());
    CHECK(it->second == payload);
  }
  CHECK(found.size() == expected);
}

// Names in the streams directory that a create or delete would leave behind when it failed halfway.
std::vector<std::string> leftovers(const std::string& streams_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(streams_dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".creating.", 0) == 0 || name.rfind(".deleted.", 0) == 0) out.push_back(name);
  }
  return out;
}

void check_serving(testing::DaemonProcess& daemon) {
  CHECK(daemon.http_get("/readyz").status == 200);
  const auto metrics = testing::parse_prometheus_text(daemon.http_get("/metrics").body);
  INFO(metrics.error);
  REQUIRE(metrics.exposition);
  CHECK(metrics.exposition->value("streamd_partitions_failed") == 0.0);
}

TEST_CASE("a full disk refuses appends without fencing, and a trim or a delete lets them resume",
          "[crash][disk]") {
  testing::TempDir dir;
  LoopDisk disk(dir.file("disk.img"), dir.file("mnt"));
  if (std::string why = disk.mount(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string data = dir.file("mnt") + "/data";
  testing::DaemonProcess daemon({"--data-dir", data});
  REQUIRE(daemon.start(std::chrono::seconds(30)));
  WireClient client(daemon.port());
  REQUIRE(client.call(create_of("fill")).has_create_stream());
  REQUIRE(client.call(create_of("other")).has_create_stream());
  std::map<uint64_t, std::string> fill_acked;
  std::map<uint64_t, std::string> other_acked;
  {
    v1::Response r = append_unkeyed(client, "other", payload_of("other", 0));
    REQUIRE(r.has_append());
    other_acked[r.append().first()] = payload_of("other", 0);
  }
  REQUIRE(client.call(commit_of("fill", 0)).has_commit());

  // Full: the append that finds no room is refused, and so is the next; nothing is fenced.
  v1::Response refused = fill(client, "fill", fill_acked);
  INFO(refused.DebugString());
  CHECK(no_space(refused));
  REQUIRE(fill_acked.size() > 10);
  CHECK(no_space(append_unkeyed(client, "fill", payload_of("fill", 9999))));
  // Another partition writes into the zeros preallocated ahead of it while they last, then is refused.
  for (uint64_t n = 1;; ++n) {
    v1::Response r = append_unkeyed(client, "other", payload_of("other", n));
    if (!r.has_append()) {
      CHECK(no_space(r));
      break;
    }
    other_acked[r.append().first()] = payload_of("other", n);
    REQUIRE(n < 64);
  }
  check_serving(daemon);

  // Reads and describe go on; what was acknowledged is all there.
  check_kept(client, "fill", fill_acked, 0);
  check_kept(client, "other", other_acked, 0);
  v1::Response described = client.call(describe_of("fill"));
  REQUIRE(described.has_describe_stream());
  CHECK(described.describe_stream().partitions(0).next() == fill_acked.rbegin()->first + 1);

  // Metadata writes fail cleanly or succeed; either way they leave no half-written file and what they
  // answered holds.
  v1::Response commit = client.call(commit_of("fill", 5));
  CHECK((commit.has_commit() || no_space(commit)));
  const uint64_t committed = commit.has_commit() ? 5 : 0;
  v1::Response asked = client.call(committed_of("fill"));
  REQUIRE(asked.has_committed());
  CHECK(asked.committed().next() == committed);
  v1::Response created = client.call(create_of("late"));
  INFO(created.DebugString());
  CHECK((created.has_create_stream() || testing::error_name(created) == "STREAM_BACKEND_FAILED"));
  CHECK(leftovers(data + "/streams").empty());
  if (!created.has_create_stream()) CHECK_FALSE(std::filesystem::exists(data + "/streams/late"));

  // A trim frees whole segments: appends are taken again, no restart.
  const uint64_t next = fill_acked.rbegin()->first + 1;
  const uint64_t trim_to = next / 2;
  v1::Response trimmed = client.call(trim_of("fill", trim_to));
  INFO(trimmed.DebugString());
  REQUIRE(trimmed.has_trim());
  v1::Response resumed = append_unkeyed(client, "fill", payload_of("fill", next));
  INFO(resumed.DebugString());
  REQUIRE(resumed.has_append());
  CHECK(resumed.append().first() == next);
  fill_acked[next] = payload_of("fill", next);
  v1::Response other = append_unkeyed(client, "other", payload_of("other", 100));
  REQUIRE(other.has_append());
  other_acked[other.append().first()] = payload_of("other", 100);
  REQUIRE(client.call(commit_of("fill", trim_to + 1)).has_commit());
  check_kept(client, "fill", fill_acked, trim_to);
  check_serving(daemon);

  // Full again; deleting a stream frees its space for the others.
  CHECK(no_space(fill(client, "fill", fill_acked)));
  REQUIRE(client.call(delete_of("fill")).has_delete_stream());
  CHECK(leftovers(data + "/streams").empty());
  other = append_unkeyed(client, "other", payload_of("other", 101));
  INFO(other.DebugString());
  REQUIRE(other.has_append());
  other_acked[other.append().first()] = payload_of("other", 101);
  check_kept(client, "other", other_acked, 0);
  check_serving(daemon);

  // Nothing acknowledged was lost, across a kill -9 as well.
  daemon.kill9();
  REQUIRE(daemon.start(std::chrono::seconds(30)));
  WireClient after(daemon.port());
  check_kept(after, "other", other_acked, 0);
  CHECK(append_unkeyed(after, "other", payload_of("other", 102)).has_append());
  daemon.kill9();
}

}  // namespace
}  // namespace streamd
