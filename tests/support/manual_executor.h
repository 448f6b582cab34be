// ManualExecutor: an Executor whose tasks run only when the test says, so a test can queue several
// appends before the flush that takes them all (group commit) and observe state between the steps.
#pragma once

#include <deque>
#include <functional>
#include <mutex>

#include "server/storage/executor.h"

namespace streamd::testing {

class ManualExecutor final : public Executor {
 public:
  void post(std::function<void()> task) override {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  // Runs queued tasks (and those they post) until none is left; returns how many ran.
  size_t run_all() {
    size_t n = 0;
    while (run_one()) ++n;
    return n;
  }
  // Runs the oldest queued task; false when there was none.
  bool run_one() {
    std::function<void()> task;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty()) return false;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    return true;
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return tasks_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::function<void()>> tasks_;
};

}  // namespace streamd::testing
