// The Kafka topic configs that map onto a stream's policy (docs/KAFKA.md §Topic configs), in one table
// (topic_configs.cc) that every API reads: CreateTopics sets them on a new stream, AlterConfigs and
// IncrementalAlterConfigs change them on a live one, DescribeConfigs reports them. A config is honoured
// or refused naming it; a name the table does not hold is refused, never ignored. Adding a config is
// adding a row. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/broker/policy_change.h"
#include "server/kafka/errors.h"
#include "server/storage/policy.h"

namespace streamd::kafka {

// A config refused: the Kafka error and a message naming the config.
struct ConfigRefusal {
  Error error = Error::kInvalidConfig;
  std::string message;
};

// Sets `name` to `value` (as Kafka spells it) in `change`: INVALID_CONFIG for an unknown name or a value
// that does not parse or the policy cannot take.
std::optional<ConfigRefusal> set_topic_config(std::string_view name, std::string_view value, PolicyChange& change);
// Puts `name` back to its value in `defaults` (the broker's default policy): IncrementalAlterConfigs'
// DELETE. INVALID_CONFIG for an unknown name.
std::optional<ConfigRefusal> reset_topic_config(std::string_view name, const Policy& defaults, PolicyChange& change);
// Every config back to its value in `defaults`: AlterConfigs replaces a topic's whole set, so what it
// does not name returns to the default (the policy fields no config maps, such as max_bytes, stay).
void reset_topic_configs(const Policy& defaults, PolicyChange& change);

struct TopicConfig {
  std::string name;
  std::string value;
  bool is_default = false;  // the stream's value is the default policy's
};

// Every config DescribeConfigs reports for a stream with `policy`, in the table's order; is_default
// compares with `defaults` (the broker's default policy).
std::vector<TopicConfig> describe_topic_configs(const Policy& policy, const Policy& defaults);

}  // namespace streamd::kafka
