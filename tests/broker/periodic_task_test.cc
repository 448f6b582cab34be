#include "server/broker/periodic_task.h"

#include <catch2/catch.hpp>

#include "tests/broker/manual_scheduler.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::InlineExecutor;
using testing::ManualScheduler;

TEST_CASE("a periodic task runs once per period, on the executor, and not after stop") {
  ManualScheduler scheduler;
  InlineExecutor executor;
  int runs = 0;
  PeriodicTask task(scheduler, executor, milliseconds(100), [&] { ++runs; });
  task.start();
  scheduler.advance(milliseconds(99));
  CHECK(runs == 0);
  scheduler.advance(milliseconds(1));
  CHECK(runs == 1);
  scheduler.advance(milliseconds(250));
  CHECK(runs == 3);
  task.stop();
  CHECK(scheduler.pending() == 0);
  scheduler.advance(milliseconds(1000));
  CHECK(runs == 3);
}

TEST_CASE("the next pass is scheduled only when one ends, so passes never overlap") {
  ManualScheduler scheduler;
  // Holds posted passes until the test runs them, like a busy storage executor.
  struct HeldExecutor final : Executor {
    std::vector<std::function<void()>> held;
    void post(std::function<void()> task) override { held.push_back(std::move(task)); }
  } executor;
  int runs = 0;
  PeriodicTask task(scheduler, executor, milliseconds(100), [&] { ++runs; });
  task.start();
  scheduler.advance(milliseconds(1000));
  REQUIRE(executor.held.size() == 1);  // no second timer while the first pass waits
  CHECK(scheduler.pending() == 0);
  auto pass = std::move(executor.held[0]);
  executor.held.clear();
  pass();
  CHECK(runs == 1);
  CHECK(scheduler.pending() == 1);
  task.stop();
}

}  // namespace
}  // namespace streamd
