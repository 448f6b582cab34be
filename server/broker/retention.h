// Retention (docs/SEMANTICS.md §3, retain_for and retain_bytes), applied to one partition of an engine
// that keeps its log in segments: closed segments are dropped from the front, whole, while either rule says so —
//  - retain_for: every record of the segment is older than retain_for (its newest appended_at is more
//    than retain_for before now);
//  - retain_bytes: the partition holds more than retain_bytes ("above it the engine trims the oldest"),
//    so a partition keeps at most retain_bytes apart from its active segment.
// The active segment is never dropped as such: when its oldest record is older than retain_for it is
// first closed (SegmentedLog::roll_active_if), so a partition too quiet to fill a segment still
// forgets on time. Dropping raises the partition's first offset.
//
// Thread-safety: safe to run concurrently with appends, reads, trims and compaction (the log serialises
// its own maintenance); on files it touches the disk and waits for a flush, so it runs on the broker's
// maintenance thread.
#pragma once

#include "server/storage/policy.h"
#include "server/storage/segmented_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// Returns how many segments were dropped (0 when the policy keeps everything).
Result<uint64_t> apply_segment_retention(SegmentedLog& log, const Policy& policy, Timestamp now);

}  // namespace streamd
