// Long-poll reads (wait_ms > 0): woken by an append to any named partition, answered empty at the
// deadline, cancelled cleanly when their connection closes.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "proto/placement.h"
#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"
#include "tests/support/prometheus_text.h"

namespace streamd::testing {
namespace {

std::string key_landing_on(int32_t partition, int32_t partitions) {
  for (int i = 0;; ++i) {
    std::string key = "k" + std::to_string(i);
    if (placement::partition_of(key, partitions) == partition) return key;
  }
}

std::optional<double> scrape(const DaemonProcess& daemon, const std::string& name) {
  auto reply = daemon.http_get("/metrics");
  auto parsed = parse_prometheus_text(reply.body);
  if (!parsed.exposition) return std::nullopt;
  return parsed.exposition->value(name);
}

TEST_CASE("a waiting Read wakes on an append from another connection", "[long_poll]") {
  RunningDaemon r;
  WireClient reader(r.daemon.port());
  WireClient writer(r.daemon.port());
  REQUIRE(writer.call(create_request("events", 1)).has_create_stream());

  // Wait far longer than the test takes: only the wake can answer it in time.
  const uint64_t id = reader.send(read_request("events", {{0, 0}}, 10, 60'000));
  // The read is registered once the broker counts it as waiting.
  for (int i = 0; i < 500 && scrape(r.daemon, "streamd_waiting_reads") != 1.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(scrape(r.daemon, "streamd_waiting_reads") == 1.0);
  REQUIRE(writer.call(append_request("events", {{"", "wake up", {}}})).has_append());

  auto response = reader.wait_for(id, std::chrono::seconds(10));
  REQUIRE(response.has_value());
  REQUIRE(response->has_read());
  REQUIRE(response->read().partitions(0).entries_size() == 1);
  CHECK(response->read().partitions(0).entries(0).record().payload() == "wake up");
  CHECK(scrape(r.daemon, "streamd_waiting_reads") == 0.0);
}

TEST_CASE("a long-poll over several partitions wakes on an append to any of them", "[long_poll]") {
  RunningDaemon r;
  WireClient reader(r.daemon.port());
  WireClient writer(r.daemon.port());
  REQUIRE(writer.call(create_request("spread", 4)).has_create_stream());

  for (int32_t target = 0; target < 4; ++target) {
    INFO("partition " << target);
    v1::Request bounds;
    std::vector<std::pair<int32_t, uint64_t>> cursors;
    for (int32_t p = 0; p < 4; ++p) {
      bounds.mutable_bounds()->set_stream("spread");
      bounds.mutable_bounds()->set_partition(p);
      auto b = writer.call(bounds);
      REQUIRE(b.has_bounds());
      cursors.emplace_back(p, b.bounds().next());
    }
    const uint64_t id = reader.send(read_request("spread", cursors, 10, 60'000));
    for (int i = 0; i < 500 && scrape(r.daemon, "streamd_waiting_reads") != 1.0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(writer.call(append_request("spread", {{key_landing_on(target, 4), "to " + std::to_string(target), {}}}))
                .has_append());
    auto response = reader.wait_for(id, std::chrono::seconds(10));
    REQUIRE(response.has_value());
    REQUIRE(response->has_read());
    REQUIRE(response->read().partitions_size() == 4);
    for (int32_t p = 0; p < 4; ++p) {
      CHECK(response->read().partitions(p).entries_size() == (p == target ? 1 : 0));
    }
  }
}

TEST_CASE("a long-poll at the deadline answers empty, not an error", "[long_poll]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("idle", 2)).has_create_stream());
  auto response = c.call(read_request("idle", {{0, 0}, {1, 0}}, 10, 200));
  REQUIRE(response.has_read());
  CHECK_FALSE(response.has_error());
  REQUIRE(response.read().partitions_size() == 2);
  CHECK(response.read().partitions(0).entries_size() == 0);
  CHECK(response.read().partitions(1).next_from() == 0);
}

TEST_CASE("a long-poll whose connection closes is cancelled, the broker carries on", "[long_poll]") {
  RunningDaemon r;
  {
    WireClient c(r.daemon.port());
    REQUIRE(c.call(create_request("left", 1)).has_create_stream());
    c.send(read_request("left", {{0, 0}}, 10, 60'000));
    for (int i = 0; i < 500 && scrape(r.daemon, "streamd_waiting_reads") != 1.0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(scrape(r.daemon, "streamd_waiting_reads") == 1.0);
  }
  for (int i = 0; i < 500 && scrape(r.daemon, "streamd_waiting_reads") != 0.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(scrape(r.daemon, "streamd_waiting_reads") == 0.0);
  WireClient other(r.daemon.port());
  REQUIRE(other.call(append_request("left", {{"", "after", {}}})).has_append());
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

TEST_CASE("SIGTERM answers a waiting long-poll at once instead of waiting it out", "[long_poll]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  WireClient c(daemon.port());
  REQUIRE(c.call(create_request("draining", 1)).has_create_stream());
  const uint64_t id = c.send(read_request("draining", {{0, 0}}, 10, 600'000));
  for (int i = 0; i < 500 && scrape(daemon, "streamd_waiting_reads") != 1.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(scrape(daemon, "streamd_waiting_reads") == 1.0);
  daemon.signal(SIGTERM);
  auto answer = c.wait_for(id, std::chrono::seconds(10));
  REQUIRE(answer.has_value());
  REQUIRE(answer->has_read());
  CHECK(answer->read().partitions(0).entries_size() == 0);
  CHECK(c.socket().closed_by_peer());
  CHECK(daemon.wait_exit() == 0);
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

TEST_CASE("deleting the stream answers its waiting reads with STREAM_NOT_FOUND", "[long_poll]") {
  RunningDaemon r;
  WireClient reader(r.daemon.port());
  WireClient admin(r.daemon.port());
  REQUIRE(admin.call(create_request("doomed", 2)).has_create_stream());
  const uint64_t id = reader.send(read_request("doomed", {{0, 0}, {1, 0}}, 10, 60'000));
  for (int i = 0; i < 500 && scrape(r.daemon, "streamd_waiting_reads") != 1.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(scrape(r.daemon, "streamd_waiting_reads") == 1.0);
  v1::Request del;
  del.mutable_delete_stream()->set_name("doomed");
  REQUIRE(admin.call(del).has_delete_stream());
  auto answer = reader.wait_for(id, std::chrono::seconds(10));
  REQUIRE(answer.has_value());
  CHECK(error_name(*answer) == "STREAM_NOT_FOUND");
}

}  // namespace
}  // namespace streamd::testing
