// server/kafka/topic_configs.h: Kafka topic configs onto a policy change, back to the default, and
// described.
#include "server/kafka/topic_configs.h"

#include <catch2/catch.hpp>

namespace streamd::kafka {
namespace {

using std::chrono::milliseconds;

TEST_CASE("the mapped configs set their policy fields, -1 is the policy's zero") {
  PolicyChange c;
  CHECK_FALSE(set_topic_config("retention.ms", "60000", c));
  CHECK_FALSE(set_topic_config("retention.bytes", "-1", c));
  CHECK_FALSE(set_topic_config("segment.bytes", "1048576", c));
  CHECK_FALSE(set_topic_config("max.message.bytes", "2048", c));
  CHECK_FALSE(set_topic_config("min.compaction.lag.ms", "5000", c));
  CHECK_FALSE(set_topic_config("message.timestamp.type", "LogAppendTime", c));
  CHECK(c.retain_for == milliseconds(60000));
  CHECK(c.retain_bytes == 0);
  CHECK(c.segment_bytes == 1048576);
  CHECK(c.max_record_bytes == 2048);
  CHECK(c.compact_after == milliseconds(5000));
  CHECK_FALSE(c.partitions);
  CHECK_FALSE(c.max_bytes);  // no Kafka config maps max_bytes or block_timeout
  CHECK_FALSE(c.block_timeout);
  const Policy p = c.overlaid(Policy{});
  CHECK(p.retain_for == milliseconds(60000));
  CHECK(p.max_record_bytes == 2048);
  CHECK(p.compact_after == milliseconds(5000));
  CHECK(p.timestamp_type == TimestampType::kLogAppendTime);
  CHECK_FALSE(set_topic_config("message.timestamp.type", "CreateTime", c));
  CHECK(c.timestamp_type == TimestampType::kCreateTime);
}

TEST_CASE("unknown or malformed configs are refused by name, and the change stays as it was") {
  PolicyChange c;
  c.retain_for = milliseconds(7);
  auto unknown = set_topic_config("cleanup.policy", "compact", c);
  REQUIRE(unknown);
  CHECK(unknown->error == Error::kInvalidConfig);
  CHECK(unknown->message.find("cleanup.policy") != std::string::npos);
  for (auto [name, value] : {std::pair{"retention.ms", "soon"}, {"retention.ms", "0"}, {"retention.ms", "-2"},
                             {"retention.bytes", "0"}, {"segment.bytes", "0"}, {"max.message.bytes", "-5"},
                             {"min.compaction.lag.ms", "-1"}, {"retention.ms", ""}, {"retention.ms", "12x"},
                             {"message.timestamp.type", "createtime"}}) {
    INFO(name << "=" << value);
    auto refused = set_topic_config(name, value, c);
    REQUIRE(refused);
    CHECK(refused->error == Error::kInvalidConfig);
    CHECK(refused->message.find(name) != std::string::npos);
  }
  PolicyChange expected;
  expected.retain_for = milliseconds(7);
  CHECK(c == expected);
}

TEST_CASE("reset puts one config, or every config, back to the default policy's value") {
  Policy defaults;
  defaults.retain_for = milliseconds(1000);
  defaults.max_bytes = 1 << 20;
  defaults = defaults.normalized();
  PolicyChange one;
  CHECK_FALSE(reset_topic_config("retention.ms", defaults, one));
  CHECK(one.retain_for == milliseconds(1000));
  CHECK_FALSE(reset_topic_config("message.timestamp.type", defaults, one));
  CHECK(one.timestamp_type == TimestampType::kCreateTime);
  auto unknown = reset_topic_config("compression.type", defaults, one);
  REQUIRE(unknown);
  CHECK(unknown->error == Error::kInvalidConfig);

  PolicyChange all;
  reset_topic_configs(defaults, all);
  CHECK(all.retain_for == milliseconds(1000));
  CHECK(all.retain_bytes == 0);
  CHECK(all.segment_bytes == Policy::kDefaultSegmentBytes);
  CHECK(all.max_record_bytes == Policy::kDefaultMaxRecordBytes);
  CHECK(all.compact_after == milliseconds(0));
  CHECK(all.timestamp_type == TimestampType::kCreateTime);
  CHECK_FALSE(all.max_bytes);  // not a Kafka config: the stream keeps its own
  CHECK_FALSE(all.partitions);
}

TEST_CASE("described configs show the normalized policy and which equal the default policy's") {
  Policy p;
  p.retain_for = std::chrono::hours(1);
  Policy defaults;
  defaults.max_record_bytes = 1000;
  const auto configs = describe_topic_configs(p.normalized(), defaults);
  REQUIRE(configs.size() == 6);
  CHECK(configs[0].name == "retention.ms");
  CHECK(configs[0].value == "3600000");
  CHECK_FALSE(configs[0].is_default);
  CHECK(configs[1].value == "-1");
  CHECK(configs[1].is_default);
  CHECK(configs[2].value == "67108864");
  CHECK(configs[3].name == "max.message.bytes");
  CHECK(configs[3].value == "1048576");
  CHECK_FALSE(configs[3].is_default);  // the broker's default is 1000
  CHECK(configs[5].name == "message.timestamp.type");
  CHECK(configs[5].value == "CreateTime");
  CHECK(configs[5].is_default);
  p.timestamp_type = TimestampType::kLogAppendTime;
  const auto changed = describe_topic_configs(p.normalized(), defaults);
  CHECK(changed[5].value == "LogAppendTime");
  CHECK_FALSE(changed[5].is_default);
}

}  // namespace
}  // namespace streamd::kafka
