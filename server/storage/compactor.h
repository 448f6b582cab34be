// Compaction of one partition, exactly docs/SEMANTICS.md §6's rules:
//  - only records at least compact_after old (appended_at <= now - compact_after) are looked at;
//  - of each key, the last such record survives and every earlier one is dropped;
//  - a surviving tombstone (keyed, null payload: RecordView::tombstone) stays one more compact_after, then
//    goes with its key (dropped once appended_at <= now - 2 × compact_after);
//  - unkeyed records are never dropped; offsets are kept (reads skip the holes; bounds do not move);
//  - the result counts what was looked at, kept and dropped, kept + dropped == scanned;
//  - a zero compact_after compacts nothing and returns zeros;
//  - transactions (docs/TRANSACTIONS.md): nothing at or past the last stable offset is looked at, a
//    commit or abort marker is never dropped, and an aborted record is no key's last value (it is
//    dropped like any superseded one, or kept when its key has no other).
//
// Mechanics: one pass over the eligible records (a prefix of the partition, appended_at never
// decreasing) finds each key's last eligible offset; then each closed segment holding a record to drop is
// rewritten batch for batch — same base offset, offset range and instant, the survivors at their deltas —
// through the log's SegmentRewrite (segmented_log.h; on files a swap file, synced and swapped in, so a
// crash leaves the old segment or the new one). Segments with nothing to drop are not rewritten. A batch
// left empty is omitted, except the last of its segment, which keeps the segment's offset range whole.
//
// The active segment is never rewritten (the writer owns it): its eligible records count towards
// supersession but are scanned, and dropped, only once the segment has rolled (the broker rolls it
// with SegmentedLog::roll_active_if before compacting, once its oldest record is eligible). Records below the
// partition's first offset are no longer retained and are neither counted nor touched.
//
// Thread-safety: one compaction per partition at a time (callers serialise); reads, appends, trims and
// retention may run concurrently.
#pragma once

#include <chrono>
#include <cstdint>

#include "server/storage/segmented_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

struct CompactionStats {
  int64_t scanned = 0;
  int64_t kept = 0;
  int64_t dropped = 0;
  int64_t segments_rewritten = 0;
  bool operator==(const CompactionStats&) const = default;
};

Result<CompactionStats> compact_partition(SegmentedLog& log, std::chrono::milliseconds compact_after, Timestamp now);

}  // namespace streamd
