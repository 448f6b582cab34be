// Policy: what the broker enforces on one stream (docs/SEMANTICS.md §3). Its zero value
// works: every zero field has one reading, resolved by normalized(). validate() is the one place that
// refuses a policy, by field (STREAM_MISCONFIGURED with fields.field naming it).
#pragma once

#include <chrono>
#include <cstdint>

#include "server/storage/status.h"

namespace streamd {

struct Policy {
  static constexpr int64_t kDefaultMaxRecordBytes = 1 << 20;
  static constexpr int64_t kDefaultSegmentBytes = 64ll << 20;

  int32_t partitions = 0;                      // 0 → 1
  int64_t max_record_bytes = 0;                // 0 → 1 MiB
  std::chrono::milliseconds retain_for{0};     // 0 → keep forever
  int64_t retain_bytes = 0;                    // 0 → unbounded, per partition
  int64_t max_bytes = 0;                       // 0 → unbounded, whole stream
  std::chrono::milliseconds block_timeout{0};  // 0 → refuse at once when full
  int64_t segment_bytes = 0;                   // 0 → 64 MiB
  std::chrono::milliseconds compact_after{0};  // 0 → never compact

  bool operator==(const Policy&) const = default;

  // Refuses, by field, what docs/SEMANTICS.md §3 refuses: negative values, a positive max_bytes below the
  // normalized max_record_bytes, a positive block_timeout with no max_bytes.
  Status validate() const;
  // The policy with zero fields resolved to their defaults. Does not validate.
  Policy normalized() const;
};

}  // namespace streamd
