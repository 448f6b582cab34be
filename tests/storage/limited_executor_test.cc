#include "server/storage/limited_executor.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/storage/blocking_tasks.h"

namespace streamd {
namespace {

using namespace std::chrono_literals;

// As the PostgreSQL engine holds them: the pool goes first, running what is queued and joining its
// threads, so no task is left to the executor when it goes.
struct Flushes {
  Flushes(unsigned threads, size_t max_running, RunningLimit limit)
      : limited(pool, max_running, limit), pool(threads) {}
  LimitedExecutor limited;
  ThreadPool pool;
};

TEST_CASE("limited executor: its own tasks run as the limit allows, the other executor's are not held") {
  Flushes f(8, 8, kStorageRunningLimit);
  Blockers held;
  for (int i = 0; i < 8; ++i) f.limited.post(held.task());  // W2: 8 busy partitions, one flush each
  REQUIRE(held.wait_started(2));
  Blockers direct;
  for (int i = 0; i < 3; ++i) f.pool.post(direct.task());  // a transaction's writes: not behind the flushes
  REQUIRE(direct.wait_started(3));
  std::this_thread::sleep_for(50ms);  // time for a third flush to start, were it allowed
  CHECK(held.started() == 2);
  held.release();
  direct.release();
  REQUIRE(held.wait_finished(8));
  REQUIRE(direct.wait_finished(3));  // before `direct` goes: the pool's threads are still in its tasks
  CHECK(held.peak() == 2);
}

TEST_CASE("limited executor: never more than max_running, however many wait") {
  Flushes f(8, 3, kStorageRunningLimit);
  Blockers held;
  for (int i = 0; i < 100; ++i) f.limited.post(held.task());  // 25 wanted by the limit
  REQUIRE(held.wait_started(3));
  std::this_thread::sleep_for(50ms);
  CHECK(held.started() == 3);
  held.release();
  REQUIRE(held.wait_finished(100));
  CHECK(held.peak() == 3);
}

TEST_CASE("limited executor: sharers take their part of the limit, and a larger part starts at once") {
  Flushes f(8, 8, kStorageRunningLimit);
  LimitedExecutor& flushes = f.limited;
  flushes.set_sharers(3);  // three brokers, 3 flushes waiting each: 2 or 3 for all of them, 1 here
  Blockers held;
  for (int i = 0; i < 3; ++i) flushes.post(held.task());
  REQUIRE(held.wait_started(1));
  std::this_thread::sleep_for(50ms);
  CHECK(held.started() == 1);
  flushes.set_sharers(1);  // the others left: two at once, the second without waiting for the first
  REQUIRE(held.wait_started(2));
  std::this_thread::sleep_for(50ms);
  CHECK(held.started() == 2);
  held.release();
  REQUIRE(held.wait_finished(3));

  Blockers many;
  flushes.set_sharers(3);
  for (int i = 0; i < 40; ++i) flushes.post(many.task());  // 120 over three: 30 for all, 10 here, up to 8
  REQUIRE(many.wait_started(8));
  std::this_thread::sleep_for(50ms);
  CHECK(many.started() == 8);
  many.release();
  REQUIRE(many.wait_finished(40));
}

TEST_CASE("limited executor: tasks start in posting order, and every one runs") {
  std::vector<int> order;
  {
    Flushes one_at_a_time(4, 4, {4, 1});  // three waiting: each ends before the next starts
    for (int i = 0; i < 3; ++i) one_at_a_time.limited.post([&order, i] { order.push_back(i); });
  }
  CHECK(order == std::vector<int>{0, 1, 2});

  std::atomic<int> ran{0};
  {
    Flushes f(4, 4, kStorageRunningLimit);
    for (int i = 0; i < 1000; ++i) f.limited.post([&ran] { ++ran; });
  }
  CHECK(ran == 1000);
}

}  // namespace
}  // namespace streamd
