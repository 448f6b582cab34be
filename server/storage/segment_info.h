// SegmentInfo: what describe reports of a segment, and what retention and compaction decide from.
#pragma once

#include <cstdint>

#include "server/storage/types.h"

namespace streamd {

struct SegmentInfo {
  Offset base;
  Offset end;            // offset after the segment's last record slot
  uint64_t bytes = 0;    // logical log bytes
  Timestamp min_appended_at;  // the first batch's instant (zero when the segment is empty)
  Timestamp max_appended_at;
  bool active = false;
};

}  // namespace streamd
