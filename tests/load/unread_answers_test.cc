// A client that pipelines appends and never reads its answers: the broker stops reading it once its
// answers fill limits.max_inflight_bytes (flow control), so its memory stays bounded, the probe
// client's latency holds while it sits there, and after limits.idle_timeout with no answer written
// the broker closes it and frees what it held.
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/load/load_fixture.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kInflight = 1 << 20;
// How long the abuser's writes must make no progress before it counts as stalled by the broker.
constexpr auto kStalled = std::chrono::seconds(2);

TEST_CASE("a client that sends appends and never reads its answers is paused, then closed",
          "[load][unread]") {
  LoadFixture f({"--limits.max-inflight-bytes", std::to_string(kInflight), "--limits.idle-timeout", "6s"});
  REQUIRE(f.probe_client().call(create_request("flood", 1)).has_create_stream());
  f.measure_idle_before();
  const uint64_t rss_before = f.rss_now();

  WireClient abuser(f.port());
  REQUIRE(abuser.connected());
  const int fd = abuser.socket().fd();
  std::string burst;
  for (int i = 0; i < 64; ++i) burst += frame_of(append_request("flood", {{"", std::string(100, 'u'), {}}}));
  uint64_t sent = 0;
  size_t offset = 0;
  auto last_progress = Clock::now();
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() - last_progress < kStalled && Clock::now() < give_up) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::send(fd, burst.data() + offset, burst.size() - offset, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) continue;
    sent += static_cast<uint64_t>(n);
    offset = (offset + static_cast<size_t>(n)) % burst.size();
    last_progress = Clock::now();
  }
  REQUIRE(Clock::now() < give_up);  // the broker did stop reading it
  const double appended = f.metric("streamd_appended_records_total");
  const uint64_t rss_stalled = f.rss_now();
  CHECK(f.metric("streamd_connections") == 2);

  f.measure_loaded();  // with the abuser stalled, holding its answers
  // The idle timeout closes it: no answer of its has been written for that long.
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (f.metric("streamd_connections") > 1 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(f.metric("streamd_connections") == 1);
  CHECK(f.metric("streamd_inflight_bytes") == 0);
  f.measure_idle_after();

  const uint64_t rss_peak = f.rss_peak();
  std::printf("never-reading client: %.1f MiB sent before the broker stopped reading it (%.0f records appended); "
              "daemon RSS %.1f MiB before, %.1f MiB while it was stalled, peak %.1f MiB\n",
              static_cast<double>(sent) / (1 << 20), appended, static_cast<double>(rss_before) / (1 << 20),
              static_cast<double>(rss_stalled) / (1 << 20), static_cast<double>(rss_peak) / (1 << 20));
  // Its answers are held to max_inflight_bytes; the rest is allocator slack and the appends' buffers.
  CHECK(rss_peak <= rss_before + 4 * kInflight + (32 << 20));
  f.check_latency("probe latency, a client not reading its answers");
}

}  // namespace
}  // namespace streamd::testing
