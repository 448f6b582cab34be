// 10,000 long-poll reads pipelined on one connection: the broker keeps limits.max_waiting_reads of
// them waiting and refuses the rest at once (UNAVAILABLE, naming the limit) instead of holding an
// unbounded number; memory stays bounded, the probe client's latency holds while they wait, and one
// append wakes every waiting read with its record.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "tests/load/load_fixture.h"

namespace streamd::testing {
namespace {

constexpr int kReads = 10'000;
constexpr int kMaxWaiting = 1'000;

TEST_CASE("10,000 pipelined long-polls on one connection: a bounded number wait, the rest are refused",
          "[load][long-poll]") {
  LoadFixture f({"--limits.max-waiting-reads", std::to_string(kMaxWaiting)});
  REQUIRE(f.probe_client().call(create_request("quiet", 1)).has_create_stream());
  f.measure_idle_before();
  const uint64_t rss_before = f.rss_now();

  WireClient poller(f.port());
  REQUIRE(poller.connected());
  std::string burst;
  for (int i = 0; i < kReads; ++i) {
    v1::Request r = read_request("quiet", {{0, 0}}, 10, 60'000);
    r.set_id(poller.next_id());
    burst += frame_of(r);
  }
  REQUIRE(poller.socket().send_all(burst));
  int refused = 0;
  for (int i = 0; i < kReads - kMaxWaiting; ++i) {
    auto answer = poller.receive(std::chrono::seconds(10));
    REQUIRE(answer.has_value());
    REQUIRE(error_name(*answer) == "UNAVAILABLE");
    CHECK(answer->error().fields().at("max_waiting_reads") == std::to_string(kMaxWaiting));
    ++refused;
  }
  CHECK(f.metric("streamd_waiting_reads") == kMaxWaiting);
  const uint64_t rss_waiting = f.rss_now();

  f.measure_loaded();  // a thousand reads waiting meanwhile
  // One append to the quiet stream answers every waiting read, each with that record.
  REQUIRE(f.probe_client().call(append_request("quiet", {{"", "wake", {}}})).has_append());
  int woken = 0;
  for (int i = 0; i < kMaxWaiting; ++i) {
    auto answer = poller.receive(std::chrono::seconds(10));
    REQUIRE(answer.has_value());
    REQUIRE(answer->has_read());
    REQUIRE(answer->read().partitions(0).entries_size() == 1);
    CHECK(answer->read().partitions(0).entries(0).record().payload() == "wake");
    ++woken;
  }
  CHECK(f.metric("streamd_waiting_reads") == 0);
  f.measure_idle_after();

  const uint64_t rss_peak = f.rss_peak();
  std::printf("10,000 pipelined long-polls: %d refused, %d waited and were woken by one append; daemon RSS %.1f MiB "
              "before, %.1f MiB while they waited, peak %.1f MiB\n",
              refused, woken, static_cast<double>(rss_before) / (1 << 20), static_cast<double>(rss_waiting) / (1 << 20),
              static_cast<double>(rss_peak) / (1 << 20));
  CHECK(rss_peak <= rss_before + (32 << 20));
  f.check_latency("probe latency, 1,000 long-polls waiting");
}

}  // namespace
}  // namespace streamd::testing
