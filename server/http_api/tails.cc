#include "server/http_api/tails.h"

#include <optional>
#include <vector>

namespace streamd::http_api {

struct Tails::Tail {
  std::string stream;
  std::vector<ReadCursor> cursors;
  std::function<bool()> attempt;
  std::function<void()> expire;
  std::mutex mu;
  bool done = false;
  std::optional<WatchId> watch;
  std::function<void()> cancel_timer;
};

bool Tails::start(const std::string& stream, const std::vector<ReadCursor>& cursors, std::chrono::milliseconds wait,
                  std::function<bool()> attempt, std::function<void()> expire) {
  auto tail = std::make_shared<Tail>();
  tail->stream = stream;
  tail->cursors = cursors;
  tail->attempt = std::move(attempt);
  tail->expire = std::move(expire);
  {
    std::lock_guard lock(mu_);
    if (stopped_ || tails_.size() >= kMaxWaiting) return false;
    tails_.insert(tail);
  }
  std::weak_ptr<Tail> weak = tail;
  auto cancel = scheduler_.schedule_after(wait, [this, weak] {
    if (auto t = weak.lock()) finish(t, true);
  });
  {
    std::lock_guard lock(tail->mu);
    tail->cancel_timer = std::move(cancel);
  }
  workers_.post([this, tail] { run(tail); });
  return true;
}

void Tails::run(const std::shared_ptr<Tail>& tail) {
  std::optional<WatchId> spent;
  {
    std::lock_guard lock(tail->mu);
    if (tail->done) return;
    spent = std::exchange(tail->watch, std::nullopt);
  }
  if (spent) broker_.unwatch(*spent);
  if (tail->attempt()) return finish(tail, false);
  std::weak_ptr<Tail> weak = tail;
  auto id = broker_.watch(tail->stream, tail->cursors, [this, weak] {
    if (auto t = weak.lock()) workers_.post([this, t] { run(t); });
  });
  if (!id.ok()) {
    // The stream went away while waiting: the next attempt answers its error.
    workers_.post([this, tail] { run(tail); });
    return;
  }
  bool late = false;
  {
    std::lock_guard lock(tail->mu);
    late = tail->done;
    if (!late) tail->watch = *id;
  }
  if (late) broker_.unwatch(*id);
}

void Tails::finish(const std::shared_ptr<Tail>& tail, bool expired) {
  std::optional<WatchId> watch;
  std::function<void()> cancel;
  {
    std::lock_guard lock(tail->mu);
    if (tail->done) return;
    tail->done = true;
    watch = std::exchange(tail->watch, std::nullopt);
    cancel = std::move(tail->cancel_timer);
  }
  if (watch) broker_.unwatch(*watch);
  if (!expired && cancel) cancel();
  {
    std::lock_guard lock(mu_);
    tails_.erase(tail);
  }
  if (expired) tail->expire();
}

void Tails::stop() {
  std::set<std::shared_ptr<Tail>> left;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    left = tails_;
  }
  for (const auto& tail : left) {
    std::function<void()> cancel;
    {
      std::lock_guard lock(tail->mu);
      cancel = tail->cancel_timer;
    }
    if (cancel) cancel();
    finish(tail, true);
  }
}

size_t Tails::waiting() const {
  std::lock_guard lock(mu_);
  return tails_.size();
}

}  // namespace streamd::http_api
