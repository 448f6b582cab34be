// 10,000 connections at once against a broker that admits 8,000: those over limits.max_connections
// are refused with UNAVAILABLE and closed, every other is served, nothing hangs or crashes, the probe
// client's appends and reads keep their latency while the 8,000 stay open, and each open connection
// costs the broker little memory.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/load/connection_herd.h"
#include "tests/load/load_fixture.h"
#include "tests/load/process_stats.h"

namespace streamd::testing {
namespace {

constexpr int kConnections = 10'000;
constexpr int kMaxConnections = 8'000;
// The memory an idle, served connection may cost the broker (socket, buffers, coroutines, timers).
constexpr uint64_t kBytesPerConnection = 64 << 10;

TEST_CASE("10,000 connections at once: those over max_connections are refused, the others served",
          "[load][connections]") {
  // This process holds every client end and the daemon (which inherits the limit) every server end.
  const uint64_t wanted = kConnections + kMaxConnections + 1'000;
  if (raise_fd_limit(wanted) < wanted) {
    WARN("skipped: RLIMIT_NOFILE cannot be raised to " << wanted << " (needs CAP_SYS_RESOURCE)");
    return;
  }
  LoadFixture f({"--limits.max-connections", std::to_string(kMaxConnections)});
  f.measure_idle_before();
  const uint64_t rss_before = f.rss_now();

  const auto start = std::chrono::steady_clock::now();
  ConnectionHerd herd(f.port(), kConnections, std::chrono::seconds(60));
  const double opened_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const HerdOutcome& out = herd.outcome();
  INFO(out.first_failure);
  // The probe client holds one of the broker's places.
  CHECK(out.served == kMaxConnections - 1);
  CHECK(out.refused == kConnections - out.served);
  CHECK(out.failed == 0);
  CHECK(f.metric("streamd_connections") == kMaxConnections);

  f.measure_loaded();
  const uint64_t rss_open = f.rss_now();
  herd.close_all();
  // The broker notices every close and gives the places back.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (f.metric("streamd_connections") > 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(f.metric("streamd_connections") == 1);
  f.measure_idle_after();

  const double per_connection =
      rss_open > rss_before ? static_cast<double>(rss_open - rss_before) / out.served : 0.0;
  std::printf("10,000 connections: %d served, %d refused, %d failed in %.2f s; daemon RSS %.1f MiB idle, "
              "%.1f MiB with %d open (%.1f KiB each)\n",
              out.served, out.refused, out.failed, opened_s, static_cast<double>(rss_before) / (1 << 20),
              static_cast<double>(rss_open) / (1 << 20), out.served, per_connection / 1024);
  CHECK(per_connection <= static_cast<double>(kBytesPerConnection));
  f.check_latency("probe latency, 8,000 connections open");
}

}  // namespace
}  // namespace streamd::testing
