// Policy: what the broker enforces on one stream (docs/SEMANTICS.md §3). Its zero value
// works: every zero field has one reading, resolved by normalized(). validate() is the one place that
// refuses a policy, by field (STREAM_MISCONFIGURED with fields.field naming it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "server/storage/status.h"

namespace streamd {

// Which instant Kafka clients see as a record's timestamp (Kafka's message.timestamp.type; docs/KAFKA.md
// §Timestamps). The native protocol always answers appended_at, whatever this says.
enum class TimestampType : uint8_t {
  kDefault = 0,        // zero value: kCreateTime, Kafka's default
  kCreateTime = 1,     // the producer's timestamp, where the record has one
  kLogAppendTime = 2,  // the broker's appended_at
};

// Kafka's spelling of a type ("CreateTime", "LogAppendTime"), of the normalized type; and back.
const char* timestamp_type_name(TimestampType type);
std::optional<TimestampType> parse_timestamp_type(std::string_view name);

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
  TimestampType timestamp_type = TimestampType::kDefault;  // kDefault → kCreateTime

  bool operator==(const Policy&) const = default;

  // Refuses, by field, what docs/SEMANTICS.md §3 refuses: negative values, a positive max_bytes below the
  // normalized max_record_bytes, a positive block_timeout with no max_bytes.
  Status validate() const;
  // The policy with zero fields resolved to their defaults. Does not validate.
  Policy normalized() const;
};

// A change of a stream's policy as the storage applies it: given the policy the storage holds now,
// the policy to keep instead (normalized, validated, the same partition count), or the refusal that
// leaves the stream as it was. The broker writes it (docs/SEMANTICS.md §3, which fields may change);
// a storage calls it while no other change of the same stream can run.
using PolicyEdit = std::function<Result<Policy>(const Policy& current)>;

}  // namespace streamd
