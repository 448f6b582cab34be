// Test tasks that hold their executor's thread until released, counting how many run at once.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace streamd {

// Tasks that hold their thread until released, counting how many run at once.
class Blockers {
 public:
  std::function<void()> task() {
    return [this] {
      std::unique_lock lock(mu_);
      ++running_;
      peak_ = std::max(peak_, running_);
      ++started_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
      --running_;
      ++finished_;
      cv_.notify_all();
    };
  }
  // Waits up to 5 s for `n` tasks to have started; false if they did not.
  bool wait_started(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_ >= n; });
  }
  bool wait_finished(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return finished_ >= n; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int started() {
    std::lock_guard lock(mu_);
    return started_;
  }
  int peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0, peak_ = 0, started_ = 0, finished_ = 0;
  bool released_ = false;
};

}  // namespace streamd
