#include "server/broker/periodic_task.h"

#include <condition_variable>
#include <mutex>

namespace streamd {

struct PeriodicTask::State {
  Scheduler& scheduler;
  Executor& executor;
  const std::chrono::milliseconds period;
  const std::function<void()> work;

  std::mutex mu;
  std::condition_variable idle;
  bool stopped = false;
  bool running = false;  // from the timer firing until the pass ends
  std::function<void()> cancel;
};

PeriodicTask::PeriodicTask(Scheduler& scheduler, Executor& executor, std::chrono::milliseconds period,
                           std::function<void()> work)
    : state_(new State{scheduler, executor, period, std::move(work), {}, {}, false, false, {}}) {}

PeriodicTask::~PeriodicTask() { stop(); }

void PeriodicTask::start() { schedule(state_); }

void PeriodicTask::schedule(const std::shared_ptr<State>& state) {
  // Scheduled outside the lock: a scheduler may run its own locks around our callback.
  auto cancel = state->scheduler.schedule_after(state->period, [state] {
    {
      std::lock_guard lock(state->mu);
      if (state->stopped || state->running) return;
      state->running = true;
    }
    state->executor.post([state] {
      bool stopped;
      {
        std::lock_guard lock(state->mu);
        stopped = state->stopped;
      }
      if (!stopped) state->work();
      {
        std::lock_guard lock(state->mu);
        state->running = false;
        state->idle.notify_all();
        if (state->stopped) return;
      }
      schedule(state);
    });
  });
  std::function<void()> stale;
  {
    std::lock_guard lock(state->mu);
    if (state->stopped) {
      stale = std::move(cancel);
    } else {
      state->cancel = std::move(cancel);
    }
  }
  if (stale) stale();
}

void PeriodicTask::stop() {
  std::function<void()> cancel;
  {
    std::unique_lock lock(state_->mu);
    state_->stopped = true;
    cancel = std::move(state_->cancel);
    state_->cancel = nullptr;
  }
  if (cancel) cancel();
  std::unique_lock lock(state_->mu);
  state_->idle.wait(lock, [this] { return !state_->running; });
}

}  // namespace streamd
