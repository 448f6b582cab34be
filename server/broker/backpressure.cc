#include "server/broker/backpressure.h"

#include <utility>
#include <vector>

namespace streamd {

Backpressure::Backpressure(std::string stream, uint64_t max_bytes, std::chrono::milliseconds block_timeout,
                           Scheduler& scheduler, std::function<uint64_t()> stored_bytes,
                           std::shared_ptr<EngineBudget> budget)
    : stream_(std::move(stream)),
      scheduler_(scheduler),
      stored_bytes_(std::move(stored_bytes)),
      budget_(std::move(budget)),
      max_bytes_(max_bytes),
      block_timeout_(block_timeout) {}

bool Backpressure::stream_full_locked() const { return max_bytes_ > 0 && stored_bytes_() + in_flight_ >= max_bytes_; }

bool Backpressure::full_locked() const { return stream_full_locked() || (budget_ && budget_->full()); }

Status Backpressure::full_status_locked() const {
  if (budget_ && !stream_full_locked()) {
    return Status(Code::kStreamFull, "The storage engine holds as much as it may",
                  {{"stream", stream_},
                   {"limit", budget_->capacity().key},
                   {"max_bytes", std::to_string(budget_->capacity().max_bytes)},
                   {"bytes", std::to_string(budget_->bytes())},
                   {"block_timeout_ms", std::to_string(block_timeout_.count())}});
  }
  return Status::of(Code::kStreamFull, {{"stream", stream_},
                                        {"max_bytes", std::to_string(max_bytes_)},
                                        {"bytes", std::to_string(stored_bytes_() + in_flight_)},
                                        {"block_timeout_ms", std::to_string(block_timeout_.count())}});
}

bool Backpressure::admit_at_once_locked(uint64_t bytes) {
  if (!shut_.ok() || !waiters_.empty() || full_locked()) return false;
  in_flight_ += bytes;
  if (budget_) budget_->admitted(bytes);
  return true;
}

bool Backpressure::try_acquire(uint64_t bytes) {
  std::lock_guard guard(mu_);
  return admit_at_once_locked(bytes);
}

void Backpressure::acquire(uint64_t bytes, Admitted admitted, Refused refused) {
  // The callbacks run after the lock is let go.
  std::unique_lock guard(mu_);
  if (admit_at_once_locked(bytes)) {
    guard.unlock();
    return admitted();
  }
  if (!shut_.ok() || block_timeout_.count() == 0) {
    Status refusal = shut_.ok() ? full_status_locked() : shut_;
    guard.unlock();
    return refused(std::move(refusal));
  }
  const uint64_t id = next_id_++;
  const std::chrono::milliseconds timeout = block_timeout_;
  waiters_.emplace(id, Waiter{bytes, std::move(admitted), std::move(refused), nullptr});
  guard.unlock();

  std::weak_ptr<Backpressure> weak = weak_from_this();
  auto cancel = scheduler_.schedule_after(timeout, [weak, id] {
    if (auto self = weak.lock()) self->on_timeout(id);
  });
  {
    std::lock_guard lock(mu_);
    auto it = waiters_.find(id);
    if (it != waiters_.end()) {
      it->second.cancel_timer = std::move(cancel);
      return;
    }
  }
  cancel();  // admitted or refused before its timer was stored
}

void Backpressure::on_timeout(uint64_t id) {
  Refused refused;
  Status status;
  {
    std::lock_guard lock(mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    refused = std::move(it->second.refused);
    waiters_.erase(it);
    status = full_status_locked();
  }
  refused(std::move(status));
}

void Backpressure::release(uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    in_flight_ -= std::min(bytes, in_flight_);
  }
  if (budget_) budget_->finished(bytes);
  room_freed();
}

void Backpressure::room_freed() {
  std::vector<Waiter> admitted;
  {
    std::lock_guard lock(mu_);
    while (!waiters_.empty() && shut_.ok() && !full_locked()) {
      auto it = waiters_.begin();
      in_flight_ += it->second.bytes;
      if (budget_) budget_->admitted(it->second.bytes);
      admitted.push_back(std::move(it->second));
      waiters_.erase(it);
    }
  }
  for (Waiter& w : admitted) {
    if (w.cancel_timer) w.cancel_timer();
    w.admitted();
  }
}

void Backpressure::shut(const Status& status) {
  std::map<uint64_t, Waiter> refused;
  {
    std::lock_guard lock(mu_);
    shut_ = status;
    refused.swap(waiters_);
  }
  for (auto& [id, w] : refused) {
    if (w.cancel_timer) w.cancel_timer();
    w.refused(status);
  }
}

void Backpressure::set_limits(uint64_t max_bytes, std::chrono::milliseconds block_timeout) {
  {
    std::lock_guard lock(mu_);
    max_bytes_ = max_bytes;
    block_timeout_ = block_timeout;
  }
  room_freed();
}

size_t Backpressure::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

}  // namespace streamd
