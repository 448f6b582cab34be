#include "server/broker/retention.h"

namespace streamd {

Result<uint64_t> apply_segment_retention(SegmentedLog& log, const Policy& policy, Timestamp now) {
  const int64_t retain_for_us = policy.retain_for.count() * 1000;
  const uint64_t retain_bytes = static_cast<uint64_t>(policy.retain_bytes);
  if (retain_for_us <= 0 && retain_bytes == 0) return uint64_t{0};

  // Whole closed segments are the unit of removal: an active segment whose oldest record has expired
  // is closed first, so a partition too quiet to fill a segment still forgets on time.
  STREAMD_RETURN_IF_ERROR(log.roll_active_if([&](const SegmentInfo& active) {
    return retain_for_us > 0 && now.micros - active.min_appended_at.micros > retain_for_us;
  }));
  uint64_t dropped = 0;
  uint64_t remaining = log.size_bytes();
  // An open transaction's records stay until its marker, however old (docs/TRANSACTIONS.md): the
  // last stable offset only moves forward, so one read of it bounds the whole pass.
  const Offset stable = log.last_stable();
  STREAMD_RETURN_IF_ERROR(log.drop_front_segments([&](const SegmentInfo& segment) {
    if (segment.end > stable) return false;
    const bool expired = retain_for_us > 0 && now.micros - segment.max_appended_at.micros > retain_for_us;
    const bool over = retain_bytes > 0 && remaining > retain_bytes;
    if (!expired && !over) return false;
    remaining -= std::min(remaining, segment.bytes);
    ++dropped;
    return true;
  }));
  return dropped;
}

}  // namespace streamd
