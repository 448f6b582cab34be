// MemoryPartition: one partition of the memory engine (docs/ENGINES.md) — the file engine's log, kept in
// memory. Batches are stored sealed, exactly as the file engine writes them (docs/FORMAT.md §"Record
// batch"), in a row of segments rolled at the policy's segment_bytes, so retention drops whole segments
// and compaction rewrites closed ones by the same rules and with the same results as on files
// (server/storage/segmented_log.h). Nothing survives the process.
//
// Appends queue in a GroupCommit on the storage executor, so they take offsets in call order and are
// answered on a storage thread like the file engine's; a batch is readable once its group is appended.
// Readers copy references to the batches they need under a shared lock and decode without it.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/broker/stream_engine.h"
#include "server/storage/producer_state.h"
#include "server/storage/clock.h"
#include "server/storage/create_time_lookup.h"
#include "server/storage/executor.h"
#include "server/storage/group_commit.h"
#include "server/storage/segmented_log.h"

namespace streamd {

class MemoryPartition final : public EnginePartition, public SegmentedLog {
 public:
  // `held` counts the bytes of every partition of the engine; this one adds and removes its own.
  // `producers` bounds its idempotent producers' states (docs/SEMANTICS.md §11).
  MemoryPartition(std::string name, uint64_t segment_bytes, Executor& executor, const Clock& clock,
                  std::shared_ptr<std::atomic<uint64_t>> held, std::shared_ptr<ProducerLimits> producers);
  ~MemoryPartition() override;
  MemoryPartition(const MemoryPartition&) = delete;
  MemoryPartition& operator=(const MemoryPartition&) = delete;

  void append(std::string batch, AppendDone done) override;
  void set_commit_listener(CommitListener listener) override;
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const override;
  Result<ReadResult> read_batches(Offset from, uint32_t max_records, uint64_t max_bytes) const override;
  bool reads_tail(Offset /*from*/) const override { return true; }
  Bounds bounds() const override;
  Result<Offset> offset_at(Timestamp t) const override;
  Result<std::optional<TimedOffset>> offset_for_create_time(CreateTime t) const override {
    return create_times_.find(*this, t);
  }
  Result<std::optional<ReadResult>> peek() const override;
  Offset last_stable() const override;
  Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const override {
    return producers_.aborted_between(from, to);
  }
  Result<std::vector<ProducerIdentity>> open_producers() const override { return producers_.open_producers(); }
  Status trim(Offset before) override;
  Result<uint64_t> apply_retention(const Policy& policy, Timestamp now) override;
  Result<CompactionStats> compact(std::chrono::milliseconds compact_after, Timestamp now) override;
  uint64_t size_bytes() const override;
  uint32_t segment_count() const override;
  // Memory has no write or sync to fail.
  bool failed() const override { return false; }

  std::vector<SegmentInfo> segments() const override;
  Status drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) override;
  Status roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) override;
  Status scan_segment(Offset base, const BatchVisitor& visit) const override;
  Result<std::unique_ptr<SegmentRewrite>> rewrite_segment(Offset base) override;
  const std::string& dir() const override { return name_; }

  // Answers queued appends; later ones are refused UNAVAILABLE.
  void close();
  // The stream's policy changed segment_bytes: from the next append on, no segment grows past it.
  void set_segment_bytes(uint64_t bytes) { segment_bytes_.store(bytes, std::memory_order_relaxed); }

 private:
  // read() and read_batches(), in `shape`.
  Result<ReadResult> read_shaped(Offset from, uint32_t max_records, uint64_t max_bytes,
                                 ReadShape shape) const;
  struct Batch {
    Offset base;
    Offset end;  // after the batch's last offset
    Timestamp appended_at;
    std::shared_ptr<const std::string> bytes;
  };
  struct Segment {
    Offset base;
    Offset end;
    uint64_t bytes = 0;
    std::vector<Batch> batches;
    SegmentInfo info(bool active) const;
  };
  struct Pending {
    std::string batch;
    AppendDone done;
  };
  class Rewrite;

  void append_group(std::vector<Pending>& group);
  // The batches a read from `from` needs next, at most `limit` of them, below `end`.
  std::vector<Batch> batches_from(Offset from, Offset end, size_t limit) const;
  Status replace_segment(Offset base, std::vector<Batch> batches);
  Status drop_front_locked(const std::function<bool(const SegmentInfo&)>& drop);
  Status no_closed_segment(Offset base) const;

  const std::string name_;
  std::atomic<uint64_t> segment_bytes_;
  const Clock& clock_;
  const std::shared_ptr<std::atomic<uint64_t>> held_;
  const std::shared_ptr<ProducerLimits> limits_;  // kept alive for producers_
  ProducerState producers_;  // checked and settled by append_group, the one writer

  mutable std::shared_mutex mu_;
  std::vector<Segment> segments_;  // never empty; the last is active
  Offset first_;
  Offset next_;
  Timestamp last_appended_at_;
  uint64_t bytes_ = 0;

  std::mutex listener_mu_;
  CommitListener listener_;
  GroupCommit<Pending> commit_;
  mutable CreateTimeLookup create_times_;
};

}  // namespace streamd
