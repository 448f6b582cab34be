// Tests of server/storage/run_at_once.h: every task runs once, several at a time, and the call returns
// only when all have.
#include "server/storage/run_at_once.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace streamd {
namespace {

TEST_CASE("run_at_once runs every task exactly once and returns after the last") {
  std::vector<std::atomic<int>> runs(1000);
  run_at_once(runs.size(), 16, [&](size_t i) {
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    runs[i].fetch_add(1);
  });
  for (const auto& r : runs) CHECK(r.load() == 1);
}

TEST_CASE("run_at_once runs up to its thread count at once, and no more") {
  // Each task waits until four are running together: that happens only if four run at once.
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  int most = 0;
  run_at_once(8, 4, [&](size_t) {
    std::unique_lock lock(mu);
    most = std::max(most, ++running);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return most >= 4; });
    --running;
  });
  CHECK(most == 4);
}

TEST_CASE("run_at_once with one thread runs the tasks in order on the caller's thread, and none when there is none") {
  std::vector<size_t> order;
  const auto caller = std::this_thread::get_id();
  run_at_once(5, 1, [&](size_t i) {
    CHECK(std::this_thread::get_id() == caller);
    order.push_back(i);
  });
  CHECK(order == std::vector<size_t>{0, 1, 2, 3, 4});
  run_at_once(0, 16, [&](size_t) { FAIL("a task ran"); });
}

}  // namespace
}  // namespace streamd
