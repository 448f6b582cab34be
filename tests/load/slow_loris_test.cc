// Slow-loris: clients that dribble a frame one byte per second hold a place each but must not hold it
// for ever, nor slow anyone else down. The broker cuts each off limits.frame_timeout after the frame's
// first byte (PROTOCOL_ERROR, then a close), the probe client's latency holds meanwhile, and memory
// stays flat.
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "tests/load/load_fixture.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLorises = 200;
constexpr auto kFrameTimeout = std::chrono::seconds(5);

struct Loris {
  std::unique_ptr<WireClient> client;
  std::string frame;  // what it dribbles: a whole Append frame
  size_t sent = 0;
  Clock::time_point first_byte;
  std::optional<Clock::time_point> closed_at;
  std::string answer;
};

// True once the broker has closed the loris's connection (its answer, if any, kept).
bool broker_closed(Loris& l) {
  const int fd = l.client->socket().fd();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      l.answer.append(buf, static_cast<size_t>(n));
      continue;
    }
    return n == 0 || (errno != EAGAIN && errno != EINTR);
  }
}

TEST_CASE("slow-loris clients dribbling a byte a second are cut off at frame_timeout", "[load][slow-loris]") {
  LoadFixture f({"--limits.frame-timeout", "5s"});
  f.measure_idle_before();
  const uint64_t rss_before = f.rss_now();

  std::vector<Loris> lorises(kLorises);
  for (Loris& l : lorises) {
    l.client = std::make_unique<WireClient>(f.port());
    REQUIRE(l.client->connected());
    l.frame = frame_of(append_request("probe", {{"", std::string(100, 'l'), {}}}));
  }
  std::thread dribbler([&] {
    const auto start = Clock::now();
    for (int second = 0, open = kLorises; open > 0 && Clock::now() - start < kFrameTimeout * 3; ++second) {
      for (Loris& l : lorises) {
        if (l.closed_at) continue;
        if (broker_closed(l)) {
          l.closed_at = Clock::now();
          --open;
          continue;
        }
        if (l.sent == 0) l.first_byte = Clock::now();
        if (l.sent < l.frame.size()) l.client->socket().send_all(l.frame.substr(l.sent++, 1));
      }
      std::this_thread::sleep_until(start + std::chrono::seconds(second + 1));
    }
  });

  f.measure_loaded();  // the lorises dribble meanwhile
  dribbler.join();

  int cut_off = 0;
  double latest_s = 0;
  for (Loris& l : lorises) {
    if (!l.closed_at) continue;
    ++cut_off;
    const double after_s = std::chrono::duration<double>(*l.closed_at - l.first_byte).count();
    latest_s = std::max(latest_s, after_s);
    CHECK(l.answer.find("PROTOCOL_ERROR") != std::string::npos);
    // Cut off at the timeout: not before it, and within the watchdog's and the dribbler's second after.
    CHECK(after_s >= 5.0 - 0.1);
    CHECK(after_s <= 5.0 + 2.5);
  }
  CHECK(cut_off == kLorises);
  const uint64_t rss_peak = f.rss_peak();
  f.measure_idle_after();
  std::printf("slow-loris: %d of %d dribbling clients cut off, the last %.2f s after its first byte; daemon RSS "
              "%.1f MiB before, peak %.1f MiB\n",
              cut_off, kLorises, latest_s, static_cast<double>(rss_before) / (1 << 20),
              static_cast<double>(rss_peak) / (1 << 20));
  CHECK(rss_peak <= rss_before + (16 << 20));
  f.check_latency("probe latency, 200 slow-loris clients");
}

}  // namespace
}  // namespace streamd::testing
