// PolicyChange: a change of a stream's policy (docs/SEMANTICS.md §3, "Changing a policy"). Each field it
// sets replaces the stream's, the others stay; a field's zero means what it means at creation (the
// default). The partition count is fixed for a stream's life, because a key's partition is
// fnv1a32(key) % partitions: a change naming another count is refused, saying so. Both protocols
// build one — the native AlterStream, Kafka's AlterConfigs and IncrementalAlterConfigs — and the
// broker applies it to the policy the engine holds at that moment (Broker::alter_stream).
//
// A plain value; overlaid() and apply_to() are pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "server/storage/policy.h"
#include "server/storage/status.h"

namespace streamd {

struct PolicyChange {
  std::optional<int32_t> partitions;  // refused unless it is the stream's count
  std::optional<int64_t> max_record_bytes;
  std::optional<std::chrono::milliseconds> retain_for;
  std::optional<int64_t> retain_bytes;
  std::optional<int64_t> max_bytes;
  std::optional<std::chrono::milliseconds> block_timeout;
  std::optional<int64_t> segment_bytes;
  std::optional<std::chrono::milliseconds> compact_after;
  std::optional<TimestampType> timestamp_type;

  bool operator==(const PolicyChange&) const = default;
  bool empty() const { return *this == PolicyChange{}; }

  // `policy` with the fields this change sets replaced, unchecked (a new stream's policy is checked
  // when it is created).
  Policy overlaid(Policy policy) const;
  // `current` (a stream's normalized policy) with the change made, validated and normalized; otherwise
  // STREAM_MISCONFIGURED naming the field (Policy::validate's refusals, and `partitions` for another
  // count), and nothing changes.
  Result<Policy> apply_to(const Policy& current) const;
};

}  // namespace streamd
