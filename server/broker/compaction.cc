#include "server/broker/compaction.h"

namespace streamd {

Result<CompactionStats> compact_segments(SegmentedLog& log, std::chrono::milliseconds compact_after, Timestamp now) {
  STREAMD_RETURN_IF_ERROR(log.roll_active_if([&](const SegmentInfo& active) {
    return compact_after.count() > 0 && now.micros - active.min_appended_at.micros >= compact_after.count() * 1000;
  }));
  return compact_partition(log, compact_after, now);
}

}  // namespace streamd
