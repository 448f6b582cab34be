// Where storage work that may block on the disk runs (writes, fdatasync, segment deletion). The network
// loop never runs a sync: it posts work here and receives completions through callbacks.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace streamd {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void post(std::function<void()> task) = 0;
};

// How many of a pool's tasks run at once: one per `waiting_per_running` tasks waiting or running,
// `min_running` at least, every thread at most. The default runs every thread.
struct RunningLimit {
  size_t waiting_per_running = 1;
  size_t min_running = std::numeric_limits<size_t>::max();

  // How many of `waiting` tasks (waiting or running) may run, before the threads' bound; zeros count as 1.
  size_t running_for(size_t waiting) const {
    const size_t per = std::max<size_t>(1, waiting_per_running);
    return std::max({size_t{1}, min_running, waiting / per + (waiting % per != 0 ? 1 : 0)});
  }
};

// The storage pool's limit. A partition's next group forms while its flush waits or runs
// (group_commit.h), so which flushes run at once decides the group sizes. When a few partitions take
// all the appends, running their flushes a few at a time lets each collect more appends for one sync:
// fewer syncs, less CPU per append. When appends spread over many partitions, each group holds one
// append however long it waits, and only more syncs in flight go faster, as far as the disk overlaps
// them. docs/PERFORMANCE.md has the measurements that set the ratio: W2's 8 busy partitions are
// fastest with 2 flushes at a time, W6's 64 waiting flushes over 1,000 partitions with 16. The
// PostgreSQL engine's flushes, each a commit, take the same limit (limited_executor.h,
// docs/ENGINES.md).
inline constexpr RunningLimit kStorageRunningLimit{4, 2};

// A pool of threads draining one FIFO queue, starting tasks in posting order as `limit` allows. The
// limit only orders work: every task posted runs, and no task may wait for another task of the same
// pool when the limit is below the threads (none does). Destruction runs every queued task, then joins.
class ThreadPool final : public Executor {
 public:
  explicit ThreadPool(unsigned threads, RunningLimit limit = {});
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void post(std::function<void()> task) override;

 private:
  void run();
  // How many tasks may run now; mu_ held.
  size_t running_limit() const;

  const RunningLimit limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace streamd
