// EngineBudget: an engine's capacity (StreamEngine::capacity, the memory engine's max_bytes) as the
// broker's backpressure sees it. An engine is full while the bytes it holds plus the bytes of admitted
// appends not yet finished reach its capacity; then an append to any of its streams waits or is refused
// STREAM_FULL by that stream's policy (backpressure.h), exactly as for a full stream — never an eviction.
// Room freed anywhere in the engine is offered to the waiters of every stream.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/broker/stream_engine.h"

namespace streamd {

class Backpressure;

class EngineBudget {
 public:
  // held: what the engine holds now.
  EngineBudget(EngineCapacity capacity, std::function<uint64_t()> held)
      : capacity_(std::move(capacity)), held_(std::move(held)) {}

  bool full() const { return bytes() >= capacity_.max_bytes; }
  uint64_t bytes() const { return held_() + in_flight_.load(); }
  const EngineCapacity& capacity() const { return capacity_; }

  void admitted(uint64_t bytes) { in_flight_.fetch_add(bytes); }
  // An admitted append finished, written (now counted by held) or not.
  void finished(uint64_t bytes) { in_flight_.fetch_sub(bytes); }

  // The streams whose waiters room_freed() offers room to.
  void enlist(const std::shared_ptr<Backpressure>& stream);
  void room_freed();

 private:
  const EngineCapacity capacity_;
  const std::function<uint64_t()> held_;
  std::atomic<uint64_t> in_flight_{0};

  std::mutex mu_;
  std::vector<std::weak_ptr<Backpressure>> streams_;
};

}  // namespace streamd
