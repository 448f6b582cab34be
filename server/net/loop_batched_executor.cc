#include "server/net/loop_batched_executor.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <utility>

namespace streamd {

void LoopBatchedExecutor::post(std::function<void()> task) {
  if (!io_.get_executor().running_in_this_thread()) {
    target_.post(std::move(task));
    return;
  }
  held_.push_back(std::move(task));
  // Queued behind the handlers already made ready by the reactor, so it runs once they have.
  if (held_.size() == 1) asio::post(io_, [this] { release(); });
}

void LoopBatchedExecutor::release() {
  std::vector<std::function<void()>> tasks;
  tasks.swap(held_);
  for (auto& task : tasks) target_.post(std::move(task));
}

}  // namespace streamd
