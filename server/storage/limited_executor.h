// LimitedExecutor: runs its tasks on another executor, starting them in posting order and no more of
// them at once than a RunningLimit (executor.h) allows, counting only its own tasks. Work that must not
// wait behind them goes to the other executor directly.
//
// The PostgreSQL engine's partitions flush through one (pg_engine.h): a flush forms its group when it
// starts (group_commit.h), so holding flushes back lets each collect more appends for one commit, while
// the engine's transactions and group commits, which a transaction waits for in series, are not held
// behind them. Several brokers over one database share what the limit bounds, the database's commits
// in flight (set_sharers): each takes its part of the limit one broker would set for all their flushes.
//
// Every task posted runs; one that ends posts the next one waiting here to the other executor. So the
// other executor must outlive this one, and this one must have no task left when destroyed.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include "server/storage/executor.h"

namespace streamd {

class LimitedExecutor final : public Executor {
 public:
  // At most `max_running` at once whatever `limit` says.
  LimitedExecutor(Executor& base, size_t max_running, RunningLimit limit);
  LimitedExecutor(const LimitedExecutor&) = delete;
  LimitedExecutor& operator=(const LimitedExecutor&) = delete;

  void post(std::function<void()> task) override;

  // How many executors like this one (one per broker) share what the limit bounds, this one included:
  // `limit` is applied to their tasks together, estimated as `sharers` times this one's, and this one
  // runs its part of it, rounded up. Tasks already running finish; the next ones start under the new limit.
  void set_sharers(size_t sharers);

 private:
  // Posts `task`, counted in running_ already, to the other executor.
  void start(std::function<void()> task);
  // After a task ran: starts the next one waiting, if the limit allows.
  void finished();
  // How many may run now; mu_ held.
  size_t running_limit() const;

  Executor& base_;
  const size_t max_running_;
  const RunningLimit limit_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;  // posted to base_ and not finished
  size_t sharers_ = 1;
};

}  // namespace streamd
