// Compaction (docs/SEMANTICS.md §6) of one partition of an engine that keeps its log in segments: the
// active segment is closed once its oldest record is old enough to compact, so a partition whose traffic
// never fills a segment is compacted too, then compact_partition (server/storage/compactor.h) rewrites the
// closed segments that hold something to drop.
#pragma once

#include <chrono>

#include "server/storage/compactor.h"
#include "server/storage/segmented_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

Result<CompactionStats> compact_segments(SegmentedLog& log, std::chrono::milliseconds compact_after, Timestamp now);

}  // namespace streamd
