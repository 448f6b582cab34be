// InterruptWatch: runs an action once, on a thread of its own, `delay` after SIGINT/SIGTERM set the
// interrupt flag — unless it is destroyed first (the command ended by itself). Commands use it to end
// in bounded time when a signal finds them waiting for a broker that is gone: `produce` abandons its
// unanswered batches after a grace period, `consume` closes its connection to cut a long poll or a
// reconnect short.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace streamd::streamctl {

class InterruptWatch {
 public:
  InterruptWatch(const std::atomic<bool>& interrupted, std::chrono::milliseconds delay, std::function<void()> action);
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

 private:
  // False when the watch was stopped during the sleep.
  bool sleep(std::stop_token stop, std::chrono::milliseconds d);

  std::mutex mutex_;
  std::condition_variable_any cv_;  // woken only by the stop request
  std::jthread thread_;             // last: it uses the members above
};

}  // namespace streamd::streamctl
