// A failing disk under the real streamd (docs/RELIABILITY.md §"A failing disk"): the daemon runs on the
// power-cut filesystem (tests/powercut), whose next fsyncs of one partition's files return EIO. The
// waiting append fails STREAM_BACKEND_FAILED, the partition is fenced (no later append is acknowledged,
// even once the disk answers again: the kernel may have dropped the pages that fsync did not write),
// the other partitions keep working, /readyz and /metrics name it, and a restart recovers it.
// Skipped, saying why, where FUSE cannot be mounted.
#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>

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

TEST_CASE("a failed fsync fences its partition only, /readyz and /metrics name it, and a restart recovers it",
          "[crash][disk]") {
  if (std::string why = PowerCutFs::unavailable_reason(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  testing::TempDir dir;
  const std::string mnt = dir.file("mnt");
  std::filesystem::create_directory(mnt);
  std::string error;
  auto fs = PowerCutFs::mount(mnt, &error);
  INFO(error);
  REQUIRE(fs != nullptr);
  testing::DaemonProcess daemon({"--data-dir", mnt + "/data"});
  REQUIRE(daemon.start(std::chrono::seconds(30)));
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

}  // namespace
}  // namespace streamd
