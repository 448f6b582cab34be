#include "server/broker/retention.h"

namespace streamd {

Result<uint64_t> apply_retention(const Stream& stream, Timestamp now) {
  const Policy& policy = stream.policy();
  const int64_t retain_for_us = policy.retain_for.count() * 1000;
  const uint64_t retain_bytes = static_cast<uint64_t>(policy.retain_bytes);
  if (retain_for_us <= 0 && retain_bytes == 0) return uint64_t{0};

  uint64_t dropped = 0;
  for (int32_t p = 0; p < stream.partition_count(); ++p) {
    PartitionLog* log = stream.partition(PartitionId(p));
    // Whole closed segments are the unit of removal: an active segment whose oldest record has expired
    // is closed first, so a partition too quiet to fill a segment still forgets on time.
    Status rolled = log->roll_active_if([&](const SegmentInfo& active) {
      return retain_for_us > 0 && now.micros - active.min_appended_at.micros > retain_for_us;
    });
    if (!rolled.ok()) return rolled.with("stream", stream.name()).with("partition", std::to_string(p));
    uint64_t remaining = log->size_bytes();
    Status status = log->drop_front_segments([&](const SegmentInfo& segment) {
      const bool expired = retain_for_us > 0 && now.micros - segment.max_appended_at.micros > retain_for_us;
      const bool over = retain_bytes > 0 && remaining > retain_bytes;
      if (!expired && !over) return false;
      remaining -= std::min(remaining, segment.bytes);
      ++dropped;
      return true;
    });
    if (!status.ok()) return status.with("stream", stream.name()).with("partition", std::to_string(p));
  }
  return dropped;
}

}  // namespace streamd
