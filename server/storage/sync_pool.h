// SyncPool: the storage executor, whose threads run the partitions' flushes (a write and an fdatasync
// each, group_commit.h) and the rest of storage's blocking work. How many of its tasks run at once
// follows how many are waiting: one per `waiting_per_thread` of them, `min_running` at least, every
// thread at most.
//
// Why: a partition's next group forms while its flush waits or runs, so which flushes run at once
// decides the group sizes. When a few partitions take all the appends, running their flushes a few at
// a time lets each collect more appends for one sync: fewer syncs, less CPU per append. When appends
// spread over many partitions, each group holds one append however long it waits, and only more syncs
// in flight go faster, as far as the disk overlaps them. docs/PERFORMANCE.md has the measurements that
// set the ratio: W2's 8 busy partitions are fastest with 2 flushes at a time, W6's 64 waiting flushes
// over 1,000 partitions with 16.
//
// The limit only orders work: every task posted runs, in posting order, and no task may wait for another
// task of the same pool (none does). Destruction runs every queued task, then joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/storage/executor.h"

namespace streamd {

class SyncPool final : public Executor {
 public:
  static constexpr unsigned kWaitingPerThread = 4;
  static constexpr unsigned kMinRunning = 2;

  explicit SyncPool(unsigned threads, unsigned waiting_per_thread = kWaitingPerThread,
                    unsigned min_running = kMinRunning);
  ~SyncPool() override;
  SyncPool(const SyncPool&) = delete;
  SyncPool& operator=(const SyncPool&) = delete;

  void post(std::function<void()> task) override;

 private:
  void run();
  // How many tasks may run now; mu_ held.
  size_t running_limit() const;

  const size_t waiting_per_thread_;
  const size_t min_running_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace streamd
