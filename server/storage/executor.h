// Where storage work that may block on the disk runs (writes, fdatasync, segment deletion). The network
// loop never runs a sync: it posts work here and receives completions through callbacks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace streamd {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void post(std::function<void()> task) = 0;
};

// A fixed pool of threads draining one FIFO queue. Destruction runs every queued task, then joins.
class ThreadPool final : public Executor {
 public:
  explicit ThreadPool(unsigned threads);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void post(std::function<void()> task) override;

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace streamd
