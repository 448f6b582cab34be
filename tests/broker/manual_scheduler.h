// ManualScheduler: a Scheduler whose time moves only when a test says so. advance() runs every call that
// falls due, in due order, on the test's thread; calls scheduled by those calls run too when due.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "server/broker/broker.h"

namespace streamd::testing {

class ManualScheduler final : public Scheduler {
 public:
  std::function<void()> schedule_after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    const uint64_t id = next_id_++;
    calls_.emplace(std::make_pair(now_ + delay, id), std::move(fn));
    return [this, key = std::make_pair(now_ + delay, id)] {
      std::lock_guard cancel_lock(mu_);
      calls_.erase(key);
    };
  }

  void advance(std::chrono::milliseconds by) {
    std::unique_lock lock(mu_);
    const std::chrono::milliseconds until = now_ + by;
    while (!calls_.empty() && calls_.begin()->first.first <= until) {
      auto it = calls_.begin();
      now_ = it->first.first;
      std::function<void()> fn = std::move(it->second);
      calls_.erase(it);
      lock.unlock();
      fn();
      lock.lock();
    }
    now_ = until;
  }

  size_t pending() const {
    std::lock_guard lock(mu_);
    return calls_.size();
  }

 private:
  mutable std::mutex mu_;
  std::chrono::milliseconds now_{0};
  uint64_t next_id_ = 0;
  std::map<std::pair<std::chrono::milliseconds, uint64_t>, std::function<void()>> calls_;
};

// Runs every task at once on the posting thread: makes background passes deterministic in tests.
class InlineExecutor final : public Executor {
 public:
  void post(std::function<void()> task) override { task(); }
};

}  // namespace streamd::testing
