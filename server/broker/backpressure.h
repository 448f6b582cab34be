// Backpressure: a stream's max_bytes (docs/SEMANTICS.md §3), the producers' side of it.
//
// The stream is full while the bytes it holds plus the bytes of admitted appends not yet finished reach
// max_bytes (docs/SEMANTICS.md §3: an append to a full stream waits); an append admitted while it is not full
// may take it past the limit by one batch. An append that finds it full waits, holding no thread, in a FIFO
// list: it is admitted when retention, a trim, a compaction or a failed append frees room, or refused
// STREAM_FULL (nothing written) once block_timeout passes — at once when block_timeout is zero. While
// any append waits, later ones queue behind it rather than overtake it.
//
// The limits follow the stream's policy: set_limits takes a changed max_bytes and block_timeout, which
// decide every later admission and refusal (an append already waiting keeps the timeout it began with).
// With max_bytes 0 and no engine capacity, every append is admitted at once.
//
// An engine with a capacity of its own (engine_budget.h) is one more way to be full: while it is, appends
// to the stream wait and are refused by the same rules, STREAM_FULL naming the engine's limit. A stream
// whose policy sets no max_bytes is then bounded by the engine alone, and refused at once when it is full
// (such a policy has no block_timeout).
//
// Thread-safety: every method may be called from any thread. `admitted` runs on the thread that found
// room (the caller of acquire, or of room_freed/release); `refused` on the caller's thread, or on the
// scheduler's thread after a timeout. Neither runs under this object's lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/broker/broker.h"
#include "server/broker/engine_budget.h"

namespace streamd {

class Backpressure : public std::enable_shared_from_this<Backpressure> {
 public:
  using Admitted = std::function<void()>;
  using Refused = std::function<void(Status)>;

  // stored_bytes: what the stream holds now (its partitions' sizes). max_bytes 0: only `budget` bounds it.
  Backpressure(std::string stream, uint64_t max_bytes, std::chrono::milliseconds block_timeout,
               Scheduler& scheduler, std::function<uint64_t()> stored_bytes,
               std::shared_ptr<EngineBudget> budget = nullptr);

  void acquire(uint64_t bytes, Admitted admitted, Refused refused);
  // acquire()'s common case without its callbacks: admits `bytes` when the stream has room and no
  // append waits, and says so; false admits nothing, and the caller acquire()s.
  bool try_acquire(uint64_t bytes);
  // The admitted append of `bytes` finished, written (now counted by stored_bytes) or not.
  void release(uint64_t bytes);
  // Room may have been freed: admits waiters in order while the stream is not full.
  void room_freed();
  // Refuses every waiter, and every later acquire, with `status` (stream deleted, broker closing).
  void shut(const Status& status);
  // The stream's policy changed (max_bytes 0: only the budget bounds it). Admits the waiters a larger
  // limit now has room for.
  void set_limits(uint64_t max_bytes, std::chrono::milliseconds block_timeout);

  size_t waiting() const;

 private:
  struct Waiter {
    uint64_t bytes = 0;
    Admitted admitted;
    Refused refused;
    std::function<void()> cancel_timer;
  };

  // Admits at once when nothing is shut, waiting or full.
  bool admit_at_once_locked(uint64_t bytes);
  bool stream_full_locked() const;
  bool full_locked() const;
  Status full_status_locked() const;
  void on_timeout(uint64_t id);

  const std::string stream_;
  Scheduler& scheduler_;
  const std::function<uint64_t()> stored_bytes_;
  const std::shared_ptr<EngineBudget> budget_;

  mutable std::mutex mu_;
  uint64_t max_bytes_;
  std::chrono::milliseconds block_timeout_;
  uint64_t in_flight_ = 0;
  uint64_t next_id_ = 0;
  std::map<uint64_t, Waiter> waiters_;  // by arrival
  Status shut_;
};

}  // namespace streamd
