#include "server/net/loop_batched_executor.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace streamd {
namespace {

// Records what reaches it and runs nothing, so a test sees when each task was handed over.
class RecordingExecutor final : public Executor {
 public:
  void post(std::function<void()> task) override { tasks.push_back(std::move(task)); }
  std::vector<std::function<void()>> tasks;
};

TEST_CASE("posts made on the loop reach the target together once the handlers already queued have run",
          "[loop_batched_executor]") {
  asio::io_context io;
  RecordingExecutor target;
  LoopBatchedExecutor executor(io, target);
  std::vector<std::string> order;
  size_t handed_over_during_pass = 0;
  asio::post(io, [&] {
    executor.post([&] { order.push_back("task 1"); });
    executor.post([&] { order.push_back("task 2"); });
    order.push_back("first handler");
  });
  asio::post(io, [&] {
    executor.post([&] { order.push_back("task 3"); });
    handed_over_during_pass = target.tasks.size();
  });
  io.run();
  CHECK(handed_over_during_pass == 0);
  REQUIRE(target.tasks.size() == 3);
  for (auto& task : target.tasks) task();
  CHECK(order == std::vector<std::string>{"first handler", "task 1", "task 2", "task 3"});

  // A later pass starts a new burst.
  target.tasks.clear();
  io.restart();
  asio::post(io, [&] { executor.post([] {}); });
  io.run();
  CHECK(target.tasks.size() == 1);
}

TEST_CASE("posts from a thread not running the loop go straight to the target", "[loop_batched_executor]") {
  asio::io_context io;
  RecordingExecutor target;
  LoopBatchedExecutor executor(io, target);
  executor.post([] {});
  CHECK(target.tasks.size() == 1);
}

}  // namespace
}  // namespace streamd
