#include "server/net/loop_scheduler.h"

#include <asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace streamd {
namespace {

using std::chrono::milliseconds;

TEST_CASE("scheduled calls run on the loop in deadline order, cancelled ones never run", "[loop_scheduler]") {
  asio::io_context io;
  LoopScheduler scheduler(io);
  std::vector<int> ran;
  scheduler.schedule_after(milliseconds(30), [&] { ran.push_back(3); });
  scheduler.schedule_after(milliseconds(1), [&] { ran.push_back(1); });
  auto cancel = scheduler.schedule_after(milliseconds(10), [&] { ran.push_back(2); });
  cancel();
  cancel();  // twice is harmless
  io.run();  // returns once every timer has fired or been cancelled
  CHECK(ran == std::vector<int>{1, 3});
}

TEST_CASE("schedule and cancel from other threads while the loop runs", "[loop_scheduler]") {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread loop([&io] { io.run(); });
  LoopScheduler scheduler(io);
  std::atomic<int> ran{0};
  std::atomic<std::thread::id> ran_on{};
  std::vector<std::function<void()>> cancels;
  for (int i = 0; i < 100; ++i) {
    cancels.push_back(scheduler.schedule_after(milliseconds(i % 2 == 0 ? 0 : 60'000), [&] {
      ran_on = std::this_thread::get_id();
      ++ran;
    }));
  }
  // The far-off half is cancelled before it can run; the other half runs on the loop thread.
  for (int i = 1; i < 100; i += 2) cancels[static_cast<size_t>(i)]();
  for (int i = 0; i < 1000 && ran.load() < 50; ++i) std::this_thread::sleep_for(milliseconds(5));
  const std::thread::id loop_id = loop.get_id();
  work.reset();
  loop.join();  // returns only once no timer is left, so the cancelled ones are gone too
  CHECK(ran.load() == 50);
  CHECK(ran_on.load() == loop_id);
}

}  // namespace
}  // namespace streamd
