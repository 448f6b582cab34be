// Under load: SIGTERM answers or refuses every append it read and loses none it acknowledged; kill -9
// loses none it acknowledged either. Checked byte for byte after a restart on the same data directory.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "tests/integration/append_load.h"
#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

constexpr int kConnections = 4;
constexpr int kWindow = 16;
constexpr int kCap = 5000;  // per connection: bounds the test whatever the machine's speed

void wait_for_acknowledged(const AppendLoad& load, uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (load.acknowledged() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(load.acknowledged() >= n);
}

// Every acknowledged record is where the broker said, byte for byte; nothing refused was written;
// nothing appears that was never sent; per connection, acknowledged offsets rise in sending order.
void check_survivors(const LoadOutcome& outcome, const std::map<std::string, Placement>& stored) {
  for (const auto& [payload, at] : outcome.acknowledged) {
    auto it = stored.find(payload);
    INFO("acknowledged record " << payload.substr(0, payload.find('|')));
    REQUIRE(it != stored.end());
    CHECK(it->second == at);
  }
  for (const auto& [payload, error] : outcome.refused) CHECK(stored.count(payload) == 0);
  for (const auto& [payload, at] : stored) {
    CHECK((outcome.acknowledged.count(payload) == 1 || outcome.unanswered.count(payload) == 1));
  }
  // Pipelined appends from one connection to one partition take offsets in sending order.
  for (const auto& sequence : outcome.acknowledged_in_order) {
    std::map<int32_t, uint64_t> last;
    for (const Placement& at : sequence) {
      if (last.count(at.partition)) CHECK(last[at.partition] < at.offset);
      last[at.partition] = at.offset;
    }
  }
}

TEST_CASE("SIGTERM under load answers what it read, exits 0 and loses no acknowledged append",
          "[durability]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  {
    WireClient admin(daemon.port());
    REQUIRE(admin.call(create_request("load", 1)).has_create_stream());
  }
  AppendLoad load(daemon.port(), "load", kConnections, kWindow, kCap);
  wait_for_acknowledged(load, 400);
  daemon.signal(SIGTERM);
  LoadOutcome outcome = load.finish();
  CHECK(daemon.wait_exit() == 0);
  INFO(daemon.log());
  CHECK(daemon.log().find("shutting down") != std::string::npos);
  // What the broker read it answered; only what was still on the wire when it closed goes unanswered.
  CHECK(outcome.unanswered.size() <= static_cast<size_t>(kConnections * kWindow));
  for (const auto& [payload, error] : outcome.refused) CHECK(error == "UNAVAILABLE");

  REQUIRE(daemon.start());
  check_survivors(outcome, read_everything(daemon.port(), "load", 1));
  CHECK(daemon.stop() == 0);
}

TEST_CASE("kill -9 under load, restart: every acknowledged record is there, in order, byte for byte",
          "[durability]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  {
    WireClient admin(daemon.port());
    REQUIRE(admin.call(create_request("crash", 2)).has_create_stream());
  }
  AppendLoad load(daemon.port(), "crash", kConnections, kWindow, kCap);
  wait_for_acknowledged(load, 400);
  daemon.kill9();
  LoadOutcome outcome = load.finish();
  CHECK(daemon.exit_code() == 128 + SIGKILL);
  CHECK(outcome.refused.empty());
  CHECK(outcome.acknowledged.size() >= 400);

  REQUIRE(daemon.start());
  auto stored = read_everything(daemon.port(), "crash", 2);
  check_survivors(outcome, stored);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
