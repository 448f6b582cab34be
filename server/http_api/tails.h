// Tails: the API's long-poll reads in progress (GET …/records?cursor=…&wait_ms=N, docs/HTTP.md §"Live
// tail"). A tail that finds nothing watches the cursors' partitions (Broker::watch) and arms one
// timer for its deadline: no polling. A wake re-reads on a worker; nothing new re-watches until the
// deadline, which answers an empty page. stop() answers every tail at once (shutdown).
//
// Threading: any thread; one mutex guards the set of tails, each tail its own state.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "server/broker/broker.h"
#include "server/storage/executor.h"

namespace streamd::http_api {

class Tails {
 public:
  // Tails that may wait at once, broker-wide; one more is refused UNAVAILABLE at start().
  static constexpr size_t kMaxWaiting = 1000;

  Tails(Broker& broker, Executor& workers, Scheduler& scheduler) : broker_(broker), workers_(workers), scheduler_(scheduler) {}

  // Runs `attempt` on a worker; while it returns false (nothing to answer yet) and the deadline has
  // not passed, waits for `cursors` to have records and tries again. At the deadline (or stop) calls
  // `expire` once instead. False (and nothing runs) when kMaxWaiting tails wait already.
  bool start(const std::string& stream, const std::vector<ReadCursor>& cursors, std::chrono::milliseconds wait,
             std::function<bool()> attempt, std::function<void()> expire);
  void stop();
  size_t waiting() const;

 private:
  struct Tail;
  void run(const std::shared_ptr<Tail>& tail);
  void finish(const std::shared_ptr<Tail>& tail, bool expired);

  Broker& broker_;
  Executor& workers_;
  Scheduler& scheduler_;
  mutable std::mutex mu_;
  std::set<std::shared_ptr<Tail>> tails_;
  bool stopped_ = false;
};

}  // namespace streamd::http_api
