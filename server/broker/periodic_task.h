// PeriodicTask: runs `work` every `period` — the timer through the Scheduler (holding no thread while it
// waits), the work itself on an Executor of the broker's maintenance (it may touch the disk, so never
// on the scheduler's thread, which may be the network loop). Passes never overlap: the next is scheduled when one ends.
//
// Thread-safety: start() and stop() from any thread; stop() cancels the timer, waits for a pass in
// progress and is final. `work` must stay callable until stop() returns.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "server/broker/broker.h"
#include "server/storage/executor.h"

namespace streamd {

class PeriodicTask {
 public:
  PeriodicTask(Scheduler& scheduler, Executor& executor, std::chrono::milliseconds period,
               std::function<void()> work);
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  void start();
  void stop();

 private:
  struct State;
  static void schedule(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace streamd
