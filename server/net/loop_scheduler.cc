#include "server/net/loop_scheduler.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <memory>

namespace streamd {
namespace {

struct Pending {
  explicit Pending(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  std::function<void()> fn;
  // Set by any thread; checked on the loop right before fn runs.
  std::atomic<bool> cancelled{false};
};

}  // namespace

std::function<void()> LoopScheduler::schedule_after(std::chrono::milliseconds delay,
                                                    std::function<void()> fn) {
  auto pending = std::make_shared<Pending>(io_);
  pending->fn = std::move(fn);
  asio::post(io_, [pending, delay] {
    if (pending->cancelled.load()) return;
    pending->timer.expires_after(delay);
    pending->timer.async_wait([pending](const std::error_code&) {
      if (pending->cancelled.exchange(true)) return;
      auto run = std::move(pending->fn);
      run();
    });
  });
  asio::io_context* io = &io_;
  return [pending, io] {
    if (pending->cancelled.exchange(true)) return;
    // The timer belongs to the loop; release fn's captures there too.
    asio::post(*io, [pending] {
      pending->timer.cancel();
      pending->fn = nullptr;
    });
  };
}

}  // namespace streamd
