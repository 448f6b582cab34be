#include "server/storage/executor.h"

#include <algorithm>

namespace streamd {

ThreadPool::ThreadPool(unsigned threads, RunningLimit limit) : limit_(limit) {
  threads = std::max(1u, threads);
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

size_t ThreadPool::running_limit() const {
  return std::min(threads_.size(), limit_.running_for(queue_.size() + running_));
}

void ThreadPool::post(std::function<void()> task) {
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

void ThreadPool::run() {
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
