#include "server/kafka/topic_configs.h"

#include <charconv>

namespace streamd::kafka {
namespace {

std::optional<int64_t> parse(std::string_view v) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> apply_topic_config(std::string_view name, std::optional<std::string_view> value,
                                              Policy& policy) {
  const std::string key(name);
  if (!value) return "config " + key + " needs a value";
  auto n = parse(*value);
  if (name == "message.timestamp.type") {
    auto type = parse_timestamp_type(*value);
    if (!type)
      return "message.timestamp.type must be CreateTime or LogAppendTime, got \"" + std::string(*value) +
             "\"";
    policy.timestamp_type = *type;
    return std::nullopt;
  }
  const bool known = name == "retention.ms" || name == "retention.bytes" || name == "segment.bytes" ||
                     name == "max.message.bytes" || name == "min.compaction.lag.ms";
  if (!known) return "config " + key + " is not supported";
  if (!n) return "config " + key + " needs an integer, got \"" + std::string(*value) + "\"";
  // Kafka spells "no limit" -1 where the policy spells it 0.
  if (name == "retention.ms") {
    if (*n < -1) return "retention.ms must be -1 or more";
    policy.retain_for = std::chrono::milliseconds(*n == -1 ? 0 : *n);
  } else if (name == "retention.bytes") {
    if (*n < -1) return "retention.bytes must be -1 or more";
    policy.retain_bytes = *n == -1 ? 0 : *n;
  } else if (name == "segment.bytes") {
    if (*n <= 0) return "segment.bytes must be positive";
    policy.segment_bytes = *n;
  } else if (name == "max.message.bytes") {
    if (*n <= 0) return "max.message.bytes must be positive";
    policy.max_record_bytes = *n;
  } else {
    if (*n < 0) return "min.compaction.lag.ms must not be negative";
    policy.compact_after = std::chrono::milliseconds(*n);
  }
  return std::nullopt;
}

std::vector<TopicConfig> describe_topic_configs(const Policy& policy) {
  const Policy n = policy.normalized();
  auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
  const Policy d = Policy{}.normalized();
  return {
      {"retention.ms", n.retain_for.count() == 0 ? "-1" : ms(n.retain_for), false,
       n.retain_for == d.retain_for},
      {"retention.bytes", n.retain_bytes == 0 ? "-1" : std::to_string(n.retain_bytes), false,
       n.retain_bytes == d.retain_bytes},
      {"segment.bytes", std::to_string(n.segment_bytes), false, n.segment_bytes == d.segment_bytes},
      {"max.message.bytes", std::to_string(n.max_record_bytes), false,
       n.max_record_bytes == d.max_record_bytes},
      {"min.compaction.lag.ms", ms(n.compact_after), false, n.compact_after == d.compact_after},
      {"message.timestamp.type", timestamp_type_name(n.timestamp_type), false,
       n.timestamp_type == d.timestamp_type},
  };
}

}  // namespace streamd::kafka
