// MemoryEngine: every stream, record and group offset in the broker's memory (docs/ENGINES.md). Gone at
// restart; for tests, CI and ephemeral pipelines. It holds at most max_bytes of batches across every
// stream: the broker's backpressure (backpressure.h) makes appends past that wait or refuses them
// STREAM_FULL by each stream's policy; nothing is ever evicted to make room.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/broker/stream_engine.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"

namespace streamd {

class MemoryStream;

class MemoryEngine final : public StreamEngine {
 public:
  static constexpr const char* kCapacityKey = "storage.memory.max_bytes";

  // Appends and commits are answered on `executor`. max_bytes > 0.
  MemoryEngine(uint64_t max_bytes, Executor& executor, const Clock& clock, ProducerBounds producers = {});
  ~MemoryEngine() override;

  const char* kind() const override { return "memory"; }
  bool durable() const override { return false; }
  std::optional<EngineCapacity> capacity() const override { return EngineCapacity{kCapacityKey, max_bytes_}; }
  uint64_t size_bytes() const override { return held_->load(); }

  Result<std::shared_ptr<EngineStream>> create(const std::string& name, const Policy& policy) override;
  Status remove(const std::string& name) override;
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit) override;
  Result<std::shared_ptr<EngineStream>> find(const std::string& name) const override;
  std::vector<std::shared_ptr<EngineStream>> list() const override;
  void close() override;
  Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current) override;
  const ProducerLimits& producers() const override { return *producers_; }
  // Held in memory, like everything else here.
  TxnLog* transactions() override { return txns_.get(); }

 private:
  const uint64_t max_bytes_;
  Executor& executor_;
  const Clock& clock_;
  // Shared with every partition, which may outlive the engine while a reader holds its stream.
  std::shared_ptr<std::atomic<uint64_t>> held_ = std::make_shared<std::atomic<uint64_t>>(0);
  const std::shared_ptr<ProducerLimits> producers_;
  // Nothing survives a restart, the ids handed out included: they start from the clock (its
  // milliseconds times 2^16), so that a producer holding an id from before a restart is not mistaken
  // for a new one.
  std::atomic<int64_t> next_producer_id_;
  const std::unique_ptr<TxnLog> txns_ = TxnLog::in_memory();

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<MemoryStream>> streams_;
};

}  // namespace streamd
