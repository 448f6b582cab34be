#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "server/storage/executor.h"
#include "tests/storage/blocking_tasks.h"

namespace streamd {
namespace {

using namespace std::chrono_literals;

TEST_CASE("a pool without a running limit runs as many tasks at once as it has threads") {
  ThreadPool pool(3);
  Blockers blockers;
  for (int i = 0; i < 3; ++i) pool.post(blockers.task());
  REQUIRE(blockers.wait_started(3));
  blockers.release();
  REQUIRE(blockers.wait_finished(3));
  CHECK(blockers.peak() == 3);
}

TEST_CASE("storage pool: a few waiting tasks run two at a time, so that each partition's group can grow") {
  ThreadPool pool(16, kStorageRunningLimit);
  Blockers blockers;
  for (int i = 0; i < 8; ++i) pool.post(blockers.task());  // W2: 8 busy partitions, one flush each
  REQUIRE(blockers.wait_started(2));
  std::this_thread::sleep_for(50ms);  // time for a third to start, were it allowed
  CHECK(blockers.started() == 2);
  blockers.release();
  REQUIRE(blockers.wait_finished(8));
  CHECK(blockers.peak() == 2);
}

TEST_CASE("storage pool: many waiting tasks run one per four waiting, up to every thread") {
  ThreadPool pool(16, kStorageRunningLimit);
  Blockers blockers;
  for (int i = 0; i < 40; ++i) pool.post(blockers.task());  // 40 waiting: 10 at once
  REQUIRE(blockers.wait_started(10));
  std::this_thread::sleep_for(50ms);
  CHECK(blockers.started() == 10);
  blockers.release();
  REQUIRE(blockers.wait_finished(40));

  Blockers more;
  for (int i = 0; i < 200; ++i) pool.post(more.task());  // far more than the threads: all 16 run
  REQUIRE(more.wait_started(16));
  std::this_thread::sleep_for(50ms);
  CHECK(more.started() == 16);
  more.release();
  REQUIRE(more.wait_finished(200));
}

TEST_CASE("storage pool: tasks start in posting order, and destruction runs every queued one") {
  std::vector<int> order;
  {
    ThreadPool pool(4, {4, 1});  // three waiting, one at a time: each ends before the next starts
    for (int i = 0; i < 3; ++i) pool.post([&order, i] { order.push_back(i); });
  }
  CHECK(order == std::vector<int>{0, 1, 2});

  std::atomic<int> ran{0};
  {
    ThreadPool pool(4, kStorageRunningLimit);
    for (int i = 0; i < 1000; ++i) pool.post([&ran] { ++ran; });
  }
  CHECK(ran == 1000);
}

}  // namespace
}  // namespace streamd
