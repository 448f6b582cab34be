#include "server/kafka/topic_configs.h"

#include <array>
#include <charconv>
#include <chrono>

namespace streamd::kafka {
namespace {

using std::chrono::milliseconds;
using Refusal = std::optional<std::string>;  // a row's refusal of a value: the message

std::optional<int64_t> parse(std::string_view v) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

Refusal not_integer(std::string_view name, std::string_view value) {
  return std::string(name) + " needs an integer, got \"" + std::string(value) + "\"";
}

// Kafka spells "no limit" -1 where the policy spells it 0; Kafka's 0 ("keep nothing") has no policy
// spelling, since the policy's 0 is "no limit": refused rather than read as its opposite.
template <class Field>
Refusal set_limit(std::string_view name, std::string_view value, Field& field) {
  auto n = parse(value);
  if (!n) return not_integer(name, value);
  if (*n == 0 || *n < -1) {
    return std::string(name) + " must be -1 (no limit) or positive: 0, keeping nothing, is not offered";
  }
  field = Field(*n == -1 ? 0 : *n);
  return std::nullopt;
}

std::string limit(int64_t policy_value) { return policy_value == 0 ? "-1" : std::to_string(policy_value); }

template <class Field>
Refusal set_positive(std::string_view name, std::string_view value, Field& field) {
  auto n = parse(value);
  if (!n) return not_integer(name, value);
  if (*n <= 0) return std::string(name) + " must be positive";
  field = Field(*n);
  return std::nullopt;
}

// One Kafka topic config.
struct Row {
  std::string_view name;
  // Parses Kafka's spelling of a value into `change`; the message of its refusal otherwise.
  Refusal (*set)(std::string_view name, std::string_view value, PolicyChange& change);
  // The config's value under `policy`, as Kafka spells it.
  std::string (*get)(const Policy& policy);
  // Sets the config in `change` to its value in `defaults`.
  void (*reset)(const Policy& defaults, PolicyChange& change);
};

// docs/KAFKA.md §Topic configs gives the table with the reasons for each mapping.
constexpr auto kRows = std::to_array<Row>({
    {"retention.ms",
     [](std::string_view n, std::string_view v, PolicyChange& c) { return set_limit(n, v, c.retain_for.emplace()); },
     [](const Policy& p) { return limit(p.retain_for.count()); },
     [](const Policy& d, PolicyChange& c) { c.retain_for = d.retain_for; }},
    {"retention.bytes",
     [](std::string_view n, std::string_view v, PolicyChange& c) { return set_limit(n, v, c.retain_bytes.emplace()); },
     [](const Policy& p) { return limit(p.retain_bytes); },
     [](const Policy& d, PolicyChange& c) { c.retain_bytes = d.retain_bytes; }},
    {"segment.bytes",
     [](std::string_view n, std::string_view v, PolicyChange& c) {
       return set_positive(n, v, c.segment_bytes.emplace());
     },
     [](const Policy& p) { return std::to_string(p.segment_bytes); },
     [](const Policy& d, PolicyChange& c) { c.segment_bytes = d.segment_bytes; }},
    {"max.message.bytes",
     [](std::string_view n, std::string_view v, PolicyChange& c) {
       return set_positive(n, v, c.max_record_bytes.emplace());
     },
     [](const Policy& p) { return std::to_string(p.max_record_bytes); },
     [](const Policy& d, PolicyChange& c) { c.max_record_bytes = d.max_record_bytes; }},
    {"min.compaction.lag.ms",
     [](std::string_view n, std::string_view v, PolicyChange& c) -> Refusal {
       auto ms = parse(v);
       if (!ms) return not_integer(n, v);
       if (*ms < 0) return std::string(n) + " must not be negative";
       c.compact_after = milliseconds(*ms);
       return std::nullopt;
     },
     [](const Policy& p) { return std::to_string(p.compact_after.count()); },
     [](const Policy& d, PolicyChange& c) { c.compact_after = d.compact_after; }},
    {"message.timestamp.type",
     [](std::string_view n, std::string_view v, PolicyChange& c) -> Refusal {
       auto type = parse_timestamp_type(v);
       if (!type) return std::string(n) + " must be CreateTime or LogAppendTime, got \"" + std::string(v) + "\"";
       c.timestamp_type = *type;
       return std::nullopt;
     },
     [](const Policy& p) { return std::string(timestamp_type_name(p.timestamp_type)); },
     [](const Policy& d, PolicyChange& c) { c.timestamp_type = d.timestamp_type; }},
});

const Row* find_row(std::string_view name) {
  for (const Row& row : kRows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

ConfigRefusal unknown(std::string_view name) {
  return {Error::kInvalidConfig, "config " + std::string(name) + " is not supported (docs/KAFKA.md §Topic configs)"};
}

}  // namespace

std::optional<ConfigRefusal> set_topic_config(std::string_view name, std::string_view value, PolicyChange& change) {
  const Row* row = find_row(name);
  if (row == nullptr) return unknown(name);
  PolicyChange attempt = change;  // a refused value leaves the change as it was
  if (Refusal refused = row->set(name, value, attempt)) return ConfigRefusal{Error::kInvalidConfig, *refused};
  change = attempt;
  return std::nullopt;
}

std::optional<ConfigRefusal> reset_topic_config(std::string_view name, const Policy& defaults, PolicyChange& change) {
  const Row* row = find_row(name);
  if (row == nullptr) return unknown(name);
  row->reset(defaults, change);
  return std::nullopt;
}

void reset_topic_configs(const Policy& defaults, PolicyChange& change) {
  for (const Row& row : kRows) {
    row.reset(defaults, change);
  }
}

std::vector<TopicConfig> describe_topic_configs(const Policy& policy, const Policy& defaults) {
  const Policy p = policy.normalized();
  const Policy d = defaults.normalized();
  std::vector<TopicConfig> out;
  out.reserve(kRows.size());
  for (const Row& row : kRows) {
    std::string value = row.get(p);
    const bool is_default = value == row.get(d);
    out.push_back({std::string(row.name), std::move(value), is_default});
  }
  return out;
}

}  // namespace streamd::kafka
