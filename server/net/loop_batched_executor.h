// LoopBatchedExecutor: hands the storage executor the work the network loop posts in one pass over its
// ready sockets as one burst, after that pass, instead of task by task.
//
// Why: an append wakes its partition's flush (partition_log.h), which writes and fdatasyncs whatever
// is queued at that moment. Woken at the first of several appends read in the same pass, the flush
// syncs that one alone while the loop is still reading the others, and each of them then waits for a
// sync of its own: under many small concurrent appends most of the machine went to fdatasync calls of
// one or two batches. Held until the pass ends, the pass's appends to one partition share one write
// and one sync. The delay is the rest of one pass — microseconds — and it costs nothing when the loop
// is idle, since a pass with one append ends right after it.
//
// Posts from any other thread go straight through.
#pragma once

#include <functional>
#include <vector>

#include "server/storage/executor.h"

namespace asio {
class io_context;
}

namespace streamd {

class LoopBatchedExecutor final : public Executor {
 public:
  LoopBatchedExecutor(asio::io_context& io, Executor& target) : io_(io), target_(target) {}
  void post(std::function<void()> task) override;

 private:
  void release();

  asio::io_context& io_;
  Executor& target_;
  std::vector<std::function<void()>> held_;  // touched on the loop thread only
};

}  // namespace streamd
