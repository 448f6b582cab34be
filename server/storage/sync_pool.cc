#include "server/storage/sync_pool.h"

#include <algorithm>

namespace streamd {

SyncPool::SyncPool(unsigned threads, unsigned waiting_per_thread, unsigned min_running)
    : waiting_per_thread_(std::max(1u, waiting_per_thread)), min_running_(std::max(1u, min_running)) {
  threads = std::max(1u, threads);
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

SyncPool::~SyncPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

size_t SyncPool::running_limit() const {
  const size_t waiting = queue_.size() + running_;
  const size_t wanted = (waiting + waiting_per_thread_ - 1) / waiting_per_thread_;
  return std::min(threads_.size(), std::max(min_running_, wanted));
}

void SyncPool::post(std::function<void()> task) {
  bool start;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
    start = running_ < running_limit();
  }
  // A task that cannot start yet needs no thread woken: the limit grows only with posts, and a thread
  // finishing a task looks at the queue before it sleeps.
  if (start) cv_.notify_one();
}

void SyncPool::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return (stopping_ && queue_.empty()) || (!queue_.empty() && running_ < running_limit()); });
    if (queue_.empty()) break;  // stopping and drained
    auto task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    task();
    task = nullptr;  // what the task holds is released outside the lock
    lock.lock();
    --running_;
  }
  // The last to drain the queue wakes the threads still waiting for work, so that they end too.
  cv_.notify_all();
}

}  // namespace streamd
