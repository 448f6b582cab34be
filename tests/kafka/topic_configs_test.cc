// server/kafka/topic_configs.h: Kafka topic configs onto the policy, and back.
#include "server/kafka/topic_configs.h"

#include <catch2/catch.hpp>

namespace streamd::kafka {
namespace {

TEST_CASE("the mapped configs set their policy fields, -1 is the policy's zero") {
  Policy p;
  CHECK_FALSE(apply_topic_config("retention.ms", "60000", p));
  CHECK_FALSE(apply_topic_config("retention.bytes", "-1", p));
  CHECK_FALSE(apply_topic_config("segment.bytes", "1048576", p));
  CHECK_FALSE(apply_topic_config("max.message.bytes", "2048", p));
  CHECK_FALSE(apply_topic_config("min.compaction.lag.ms", "5000", p));
  CHECK_FALSE(apply_topic_config("message.timestamp.type", "LogAppendTime", p));
  CHECK(p.retain_for == std::chrono::milliseconds(60000));
  CHECK(p.retain_bytes == 0);
  CHECK(p.segment_bytes == 1048576);
  CHECK(p.max_record_bytes == 2048);
  CHECK(p.compact_after == std::chrono::milliseconds(5000));
  CHECK(p.timestamp_type == TimestampType::kLogAppendTime);
  CHECK_FALSE(apply_topic_config("message.timestamp.type", "CreateTime", p));
  CHECK(p.timestamp_type == TimestampType::kCreateTime);
}

TEST_CASE("unknown, unsupported or malformed configs are refused by name") {
  Policy p;
  auto unknown = apply_topic_config("cleanup.policy", "compact", p);
  REQUIRE(unknown);
  CHECK(unknown->find("cleanup.policy") != std::string::npos);
  CHECK(apply_topic_config("retention.ms", "soon", p));
  CHECK(apply_topic_config("retention.ms", std::nullopt, p));
  CHECK(apply_topic_config("segment.bytes", "0", p));
  auto type = apply_topic_config("message.timestamp.type", "createtime", p);
  REQUIRE(type);
  CHECK(type->find("CreateTime or LogAppendTime") != std::string::npos);
  CHECK(p == Policy{});
}

TEST_CASE("described configs show the normalized policy and which are defaults") {
  Policy p;
  p.retain_for = std::chrono::hours(1);
  const auto configs = describe_topic_configs(p.normalized());
  REQUIRE(configs.size() == 6);
  CHECK(configs[0].name == "retention.ms");
  CHECK(configs[0].value == "3600000");
  CHECK_FALSE(configs[0].is_default);
  CHECK(configs[1].value == "-1");
  CHECK(configs[1].is_default);
  CHECK(configs[2].value == "67108864");
  CHECK(configs[5].name == "message.timestamp.type");
  CHECK(configs[5].value == "CreateTime");
  CHECK_FALSE(configs[5].read_only);
  CHECK(configs[5].is_default);
  p.timestamp_type = TimestampType::kLogAppendTime;
  const auto changed = describe_topic_configs(p.normalized());
  CHECK(changed[5].value == "LogAppendTime");
  CHECK_FALSE(changed[5].is_default);
}

}  // namespace
}  // namespace streamd::kafka
