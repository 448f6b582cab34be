// The operator's side: HTTP endpoints and Prometheus metrics, start-up refusals and their exit codes,
// JSON logs, SIGHUP log reopening, idle connections.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"
#include "tests/support/prometheus_text.h"

namespace streamd::testing {
namespace {

bool wait_until(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST_CASE("health, readiness and metrics over HTTP", "[operations]") {
  RunningDaemon r;
  CHECK(r.daemon.http_get("/healthz").status == 200);
  CHECK(r.daemon.http_get("/readyz").status == 200);
  CHECK(r.daemon.http_get("/nothing-here").status == 404);

  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("metered", 2)).has_create_stream());
  for (int i = 0; i < 10; ++i)
    REQUIRE(c.call(append_request("metered", {{"", "0123456789", {}}})).has_append());
  REQUIRE(c.call(read_request("metered", {{0, 0}, {1, 0}})).has_read());
  CHECK(error_name(c.call(read_request("missing", {{0, 0}}))) == "STREAM_NOT_FOUND");

  auto reply = r.daemon.http_get("/metrics");
  REQUIRE(reply.status == 200);
  auto parsed = parse_prometheus_text(reply.body);
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  const Exposition& m = *parsed.exposition;
  CHECK(m.value("streamd_requests_total", {{"op", "append"}}) == 10);
  CHECK(m.value("streamd_request_errors_total", {{"op", "read"}, {"error", "STREAM_NOT_FOUND"}}) == 1);
  CHECK(m.value("streamd_appended_records_total") == 10);
  CHECK(m.value("streamd_appended_bytes_total") == 100);
  CHECK(m.value("streamd_read_records_total") == 10);
  CHECK(m.value("streamd_connections") == 1);
  CHECK(m.value("streamd_waiting_reads") == 0);
  CHECK(m.value("streamd_log_syncs_total") >= 1);
  CHECK(m.value("streamd_log_sync_duration_seconds_count") >= 1);
  CHECK(m.value("streamd_group_commit_batches_count") >= 1);
  CHECK(m.value("streamd_group_commit_batches_sum") == 10);
  CHECK(m.value("streamd_request_duration_seconds_count", {{"op", "append"}}) == 10);
  CHECK(m.value("streamd_streams") == 1);
  const std::map<std::string, std::string> stream{{"stream", "metered"}};
  CHECK(m.value("streamd_stream_partitions", stream) == 2);
  CHECK(m.value("streamd_stream_next_offset_sum", stream) == 10);
  CHECK(m.value("streamd_stream_retained_records", stream) == 10);
  CHECK(m.value("streamd_stream_retained_bytes", stream) > 0);
  CHECK(m.value("streamd_stream_segments", stream) == 2);
  // Per-partition series are opt-in (metrics.per_partition).
  CHECK_FALSE(m.value("streamd_partition_next_offset", {{"stream", "metered"}, {"partition", "0"}}).has_value());
  CHECK(m.types.at("streamd_log_sync_duration_seconds") == "histogram");
}

v1::Request commit_request(const std::string& stream, const std::string& group, int32_t partition, uint64_t next) {
  v1::Request request;
  v1::CommitRequest& commit = *request.mutable_commit();
  commit.set_stream(stream);
  commit.set_group(group);
  commit.set_partition(partition);
  commit.set_next(next);
  return request;
}

TEST_CASE("a group's lag is the records after its commits, over the stream's partitions", "[operations]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("lagging", 2)).has_create_stream());
  std::vector<TestRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back({"", "x", {}});
  const v1::Response appended = c.call(append_request("lagging", records));
  REQUIRE(appended.has_append());
  const int32_t partition = appended.append().partition();
  const uint64_t last = appended.append().last();
  REQUIRE(c.call(commit_request("lagging", "slow", partition, 3)).has_commit());
  REQUIRE(c.call(commit_request("lagging", "done", partition, last + 1)).has_commit());

  auto parsed = parse_prometheus_text(r.daemon.http_get("/metrics").body);
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  const Exposition& m = *parsed.exposition;
  CHECK(m.types.at("streamd_group_lag") == "gauge");
  CHECK(m.value("streamd_group_lag", {{"stream", "lagging"}, {"group", "slow"}}) == static_cast<double>(last + 1 - 3));
  CHECK(m.value("streamd_group_lag", {{"stream", "lagging"}, {"group", "done"}}) == 0);
}

TEST_CASE("metrics.per_partition adds each partition's bounds and size", "[operations]") {
  RunningDaemon r({"--metrics.per-partition", "true"});
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("metered", 2)).has_create_stream());
  for (int i = 0; i < 10; ++i)
    REQUIRE(c.call(append_request("metered", {{"", "0123456789", {}}})).has_append());
  auto parsed = parse_prometheus_text(r.daemon.http_get("/metrics").body);
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  const Exposition& m = *parsed.exposition;
  const double next0 =
      m.value("streamd_partition_next_offset", {{"stream", "metered"}, {"partition", "0"}}).value();
  const double next1 =
      m.value("streamd_partition_next_offset", {{"stream", "metered"}, {"partition", "1"}}).value();
  CHECK(next0 + next1 == 10);
  CHECK(m.value("streamd_partition_first_offset", {{"stream", "metered"}, {"partition", "1"}}) == 0);
  CHECK(m.value("streamd_partition_retained_bytes", {{"stream", "metered"}, {"partition", "0"}}) > 0);
  CHECK(m.value("streamd_partition_segments", {{"stream", "metered"}, {"partition", "0"}}) == 1);
  CHECK(m.value("streamd_stream_next_offset_sum", {{"stream", "metered"}}) == 10);
}

TEST_CASE("a bad config value stops start-up with exit code 78 naming the key", "[operations]") {
  DaemonProcess daemon({"--limits.max-frame-bytes", "lots"});
  REQUIRE_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("limits.max_frame_bytes") != std::string::npos);
}

TEST_CASE("a data directory writable by others is refused at start (STREAM_DIRECTORY_UNUSABLE, 78)",
          "[operations]") {
  DaemonProcess daemon;
  REQUIRE(::mkdir(daemon.data_dir().c_str(), 0700) == 0);
  REQUIRE(::chmod(daemon.data_dir().c_str(), 0777) == 0);
  REQUIRE_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("STREAM_DIRECTORY_UNUSABLE") != std::string::npos);
}

TEST_CASE("a listen address in use stops start-up with exit code 69", "[operations]") {
  RunningDaemon first;
  DaemonProcess second({"--listen", "127.0.0.1:" + std::to_string(first.daemon.port())});
  REQUIRE_FALSE(second.start());
  CHECK(second.exit_code() == 69);
}

TEST_CASE("JSON logs are one object per line", "[operations]") {
  DaemonProcess daemon({"--log-format", "json"});
  REQUIRE(daemon.start());
  {
    TestSocket bad(daemon.port());
    REQUIRE(bad.send_all(std::string("\xff\xff\xff\xff", 4)));  // logs a connection error
    CHECK(bad.closed_by_peer());
  }
  CHECK(daemon.stop() == 0);
  std::istringstream lines(daemon.log());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    INFO(line);
    CHECK(line.starts_with("{\"time\":\""));
    CHECK(line.find("\"level\":\"") != std::string::npos);
    CHECK(line.ends_with("\"}"));
    ++count;
  }
  CHECK(count >= 3);
  CHECK(daemon.log().find("FRAME_TOO_LARGE") != std::string::npos);
}

TEST_CASE("SIGHUP reopens the log file after rotation", "[operations]") {
  DaemonProcess probe;
  const std::string log_file = probe.dir() + "/streamd-file.log";
  DaemonProcess daemon({"--log-file", log_file});
  REQUIRE(daemon.start());
  REQUIRE(std::rename(log_file.c_str(), (log_file + ".1").c_str()) == 0);
  daemon.signal(SIGHUP);
  struct stat st {};
  CHECK(wait_until([&] { return ::stat(log_file.c_str(), &st) == 0 && st.st_size > 0; }));
  CHECK(daemon.stop() == 0);
}

TEST_CASE("an idle connection is closed after idle_timeout, a busy one is not", "[operations]") {
  RunningDaemon r({"--limits.idle-timeout", "300ms"});
  WireClient idle(r.daemon.port());
  REQUIRE(idle.connected());
  WireClient waiting(r.daemon.port());
  REQUIRE(waiting.call(create_request("w", 1)).has_create_stream());
  // A long-poll in progress is not idleness: it is answered at its deadline, after the idle timeout.
  const uint64_t id = waiting.send(read_request("w", {{0, 0}}, 10, 1000));
  CHECK(idle.socket().closed_by_peer(std::chrono::seconds(10)));
  auto answer = waiting.wait_for(id, std::chrono::seconds(10));
  REQUIRE(answer.has_value());
  CHECK(answer->has_read());
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

TEST_CASE("a client that stops reading its answers is closed after idle_timeout", "[operations]") {
  RunningDaemon r({"--limits.idle-timeout", "300ms"});
  WireClient c(r.daemon.port());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(c.call(append_request("big", {{"", std::string(256 * 1024, 'r'), {}}})).has_append());
  }
  // Megabytes of answers the client never reads: the socket buffers fill and the writes stall.
  std::string burst;
  for (int i = 0; i < 64; ++i) {
    v1::Request read = read_request("big", {{0, 0}}, 4);
    read.set_id(static_cast<uint64_t>(100 + i));
    burst += frame_of(read);
  }
  REQUIRE(c.socket().send_all(burst));
  // Only once the broker has given up on it does the client drain what reached its socket, then EOF.
  CHECK(wait_until([&] { return r.daemon.log().find("has not read its answers") != std::string::npos; }));
  CHECK(c.socket().closed_by_peer(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace streamd::testing
