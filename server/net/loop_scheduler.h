// LoopScheduler: the broker's Scheduler (server/broker/broker.h) on the network loop's io_context, one
// steady_timer per scheduled call: block_timeout waits and the retention period hold no thread.
//
// schedule_after() and the cancel function it returns may be called from any thread: both post to the
// loop, which alone touches the timers. A cancelled call never runs, even when its timer had already
// fired and its completion was queued. Calls still pending when the io_context stops never run.
#pragma once

#include <chrono>
#include <functional>

#include "server/broker/broker.h"

namespace asio {
class io_context;
}

namespace streamd {

class LoopScheduler final : public Scheduler {
 public:
  explicit LoopScheduler(asio::io_context& io) : io_(io) {}
  std::function<void()> schedule_after(std::chrono::milliseconds delay, std::function<void()> fn) override;

 private:
  asio::io_context& io_;
};

}  // namespace streamd
