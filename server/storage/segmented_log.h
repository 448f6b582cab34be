// SegmentedLog: what retention and compaction need of a partition kept as a row of segments — the file
// engine's PartitionLog, the memory engine's MemoryPartition — so that both apply the same rules
// (server/broker/retention.h, compactor.h) to their own storage.
//
// The last segment is the active one, which appends grow; the others are closed and change only by a
// rewrite (compaction) or by being dropped whole from the front (trim, retention).
//
// Thread-safety: every method may be called from any thread, concurrently with appends and reads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/aborted_txn.h"
#include "server/storage/read_result.h"
#include "server/storage/record_batch.h"
#include "server/storage/segment_info.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// A closed segment being rewritten: the batches that replace it, in order. Dropped without commit(), it
// leaves the segment as it was.
class SegmentRewrite {
 public:
  virtual ~SegmentRewrite() = default;
  virtual Status add(std::string_view batch) = 0;
  // Swaps the rewritten segment in, as durably as the log keeps anything; a failure leaves the old one.
  virtual Status commit() = 0;
};

class SegmentedLog {
 public:
  using BatchVisitor = std::function<bool(const BatchHeader&, std::string_view batch)>;

  virtual ~SegmentedLog() = default;

  // PartitionLog's contracts (partition_log.h).
  virtual Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const = 0;
  virtual Bounds bounds() const = 0;
  virtual std::vector<SegmentInfo> segments() const = 0;
  virtual uint64_t size_bytes() const = 0;
  // Retention drops no segment that reaches past it, compaction touches no record at or past it.
  virtual Offset last_stable() const = 0;
  // What compaction must not take for a key's last value.
  virtual Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const = 0;
  virtual Status drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) = 0;
  virtual Status roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) = 0;
  // Visits every batch of closed segment `base` in order; false stops early.
  virtual Status scan_segment(Offset base, const BatchVisitor& visit) const = 0;
  // Starts the rewrite of closed segment `base`; every batch added keeps its offsets.
  virtual Result<std::unique_ptr<SegmentRewrite>> rewrite_segment(Offset base) = 0;
  // Where the log lives, for the fields of its errors.
  virtual const std::string& dir() const = 0;
};

// Whether `base` starts one of the log's closed segments now (retention, compaction and rolls change them).
inline bool has_closed_segment(const SegmentedLog& log, Offset base) {
  for (const SegmentInfo& s : log.segments()) {
    if (s.base == base && !s.active) return true;
  }
  return false;
}

}  // namespace streamd
