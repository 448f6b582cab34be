#include "server/storage/limited_executor.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace streamd {

LimitedExecutor::LimitedExecutor(Executor& base, size_t max_running, RunningLimit limit)
    : base_(base), max_running_(std::max<size_t>(1, max_running)), limit_(limit) {}

void LimitedExecutor::set_sharers(size_t sharers) {
  std::vector<std::function<void()>> starts;
  {
    std::lock_guard lock(mu_);
    sharers_ = std::max<size_t>(1, sharers);
    // A larger part starts at once what it lets run, rather than at the next post or finish.
    while (!queue_.empty() && running_ < running_limit()) {
      starts.push_back(std::move(queue_.front()));
      queue_.pop_front();
      ++running_;
    }
  }
  for (auto& task : starts) start(std::move(task));
}

size_t LimitedExecutor::running_limit() const {
  // What one executor would run for all the sharers' tasks, and this one's part of it, rounded up.
  const size_t all = limit_.running_for((queue_.size() + running_) * sharers_);
  return std::min(max_running_, all / sharers_ + (all % sharers_ != 0 ? 1 : 0));
}

void LimitedExecutor::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (running_ >= running_limit()) {
      queue_.push_back(std::move(task));
      return;
    }
    ++running_;
  }
  start(std::move(task));
}

void LimitedExecutor::start(std::function<void()> task) {
  // Behind whatever else the other executor has queued.
  base_.post([this, task = std::move(task)]() mutable {
    task();
    task = nullptr;  // what the task holds is released before the next one starts
    finished();
  });
}

void LimitedExecutor::finished() {
  std::function<void()> next;
  {
    std::lock_guard lock(mu_);
    --running_;
    // This task's place goes to the next one waiting, unless the limit shrank meanwhile.
    if (queue_.empty() || running_ >= running_limit()) return;
    ++running_;
    next = std::move(queue_.front());
    queue_.pop_front();
  }
  start(std::move(next));
}

}  // namespace streamd
