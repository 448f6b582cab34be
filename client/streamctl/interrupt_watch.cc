#include "client/streamctl/interrupt_watch.h"

namespace streamd::streamctl {
namespace {

// How long a signal may go unnoticed: the flag is set by a signal handler, which cannot wake a
// condition variable.
constexpr std::chrono::milliseconds kPollInterval{20};

}  // namespace

InterruptWatch::InterruptWatch(const std::atomic<bool>& interrupted, std::chrono::milliseconds delay,
                               std::function<void()> action)
    : thread_([this, &interrupted, delay, action = std::move(action)](std::stop_token stop) {
        while (!interrupted.load()) {
          if (!sleep(stop, kPollInterval)) return;
        }
        if (delay.count() > 0 && !sleep(stop, delay)) return;
        action();
      }) {}

InterruptWatch::~InterruptWatch() {
  thread_.request_stop();
  thread_.join();
}

bool InterruptWatch::sleep(std::stop_token stop, std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return !cv_.wait_for(lock, stop, d, [&] { return stop.stop_requested(); });
}

}  // namespace streamd::streamctl
