// The Kafka topic configs that map onto a stream's policy (docs/KAFKA.md §Topic configs):
// retention.ms → retain_for, retention.bytes → retain_bytes, segment.bytes → segment_bytes,
// max.message.bytes → max_record_bytes, min.compaction.lag.ms → compact_after, message.timestamp.type →
// timestamp_type. Any other name is refused, never ignored. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/policy.h"

namespace streamd::kafka {

// Applies `name=value` to `policy`; the refusal's text otherwise (unknown name, bad number).
std::optional<std::string> apply_topic_config(std::string_view name, std::optional<std::string_view> value,
                                              Policy& policy);

struct TopicConfig {
  std::string name;
  std::string value;
  bool read_only = false;
  bool is_default = false;  // the policy leaves the field at its default
};

// Every config DescribeConfigs reports for a stream with `policy`, in a fixed order; is_default
// compares with the zero policy normalized.
std::vector<TopicConfig> describe_topic_configs(const Policy& policy);

}  // namespace streamd::kafka
