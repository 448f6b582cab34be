// TaskGate: counts the broker's work in flight on other threads (tasks posted to the storage executor,
// scheduler callbacks) so that close() can refuse new work and wait for what already started. Shared by
// the work it guards, so a callback that fires after close finds the gate shut instead of a dead broker.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>

namespace streamd {

class TaskGate {
 public:
  // False once closed: the caller must not start the work.
  bool enter() {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    ++running_;
    return true;
  }
  void leave() {
    std::lock_guard lock(mu_);
    if (--running_ == 0) idle_.notify_all();
  }
  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  // Refuses new work, then waits for the work in flight to leave.
  void close() {
    std::unique_lock lock(mu_);
    closed_ = true;
    idle_.wait(lock, [this] { return running_ == 0; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int running_ = 0;
  bool closed_ = false;
};

}  // namespace streamd
