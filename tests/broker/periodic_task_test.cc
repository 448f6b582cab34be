#include "server/broker/periodic_task.h"

#include <catch2/catch.hpp>

#include "tests/broker/manual_scheduler.h"
#include "tests/support/manual_executor.h"

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
  testing::ManualExecutor executor;  // holds posted passes, like a busy storage executor
  int runs = 0;
  PeriodicTask task(scheduler, executor, milliseconds(100), [&] { ++runs; });
  task.start();
  scheduler.advance(milliseconds(1000));
  REQUIRE(executor.pending() == 1);  // no second timer while the first pass waits
  CHECK(scheduler.pending() == 0);
  executor.run_one();
  CHECK(runs == 1);
  CHECK(scheduler.pending() == 1);
  task.stop();
}

}  // namespace
}  // namespace streamd
