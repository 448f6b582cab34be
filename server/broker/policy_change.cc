#include "server/broker/policy_change.h"

#include <string>

namespace streamd {

Result<Policy> PolicyChange::apply_to(const Policy& current) const {
  if (partitions && Policy{.partitions = *partitions}.normalized().partitions != current.partitions) {
    return Status(Code::kStreamMisconfigured,
                  "partitions: a stream's partition count is fixed for its life (a key's partition is "
                  "fnv1a32(key) % partitions, so another count would move keys to other partitions)",
                  {{"field", "partitions"},
                   {"value", std::to_string(*partitions)},
                   {"partitions", std::to_string(current.partitions)}});
  }
  Policy next = overlaid(current);
  next.partitions = current.partitions;
  STREAMD_RETURN_IF_ERROR(next.validate());
  return next.normalized();
}

Policy PolicyChange::overlaid(Policy policy) const {
  if (partitions) policy.partitions = *partitions;
  if (max_record_bytes) policy.max_record_bytes = *max_record_bytes;
  if (retain_for) policy.retain_for = *retain_for;
  if (retain_bytes) policy.retain_bytes = *retain_bytes;
  if (max_bytes) policy.max_bytes = *max_bytes;
  if (block_timeout) policy.block_timeout = *block_timeout;
  if (segment_bytes) policy.segment_bytes = *segment_bytes;
  if (compact_after) policy.compact_after = *compact_after;
  if (timestamp_type) policy.timestamp_type = *timestamp_type;
  return policy;
}

}  // namespace streamd
