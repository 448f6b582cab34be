// The config APIs at the byte level against the real daemon: AlterConfigs v0-v2 and
// IncrementalAlterConfigs v0-v1 (their flexible versions included) change a live topic's configs, each
// refused naming the config where it cannot be honoured, validate_only changing nothing; DescribeConfigs
// shows what is in force. docs/KAFKA.md §Topic configs.
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/kafka/codec.h"
#include "tests/kafka/admin_wire.h"

namespace streamd::kafka {
namespace {

using streamd::testing::TestSocket;
using testing::ask;
using testing::create_topic_code;
using testing::KafkaDaemon;
using testing::request;

constexpr int8_t kTopic = 2;
constexpr int8_t kBroker = 4;
constexpr int8_t kSet = 0;
constexpr int8_t kDelete = 1;
constexpr int8_t kAppend = 2;

struct Config {
  std::string name;
  std::optional<std::string> value;
  int8_t op = kSet;  // IncrementalAlterConfigs only
};
struct Resource {
  int8_t type = kTopic;
  std::string name;
  std::vector<Config> configs;
};
struct Outcome {
  int16_t error = 0;
  std::string message;
  int8_t type = 0;
  std::string name;
};

// AlterConfigs (33) or IncrementalAlterConfigs (44) at `version`: each resource's outcome, in order.
std::vector<Outcome> alter(TestSocket& s, int16_t key, int16_t version, const std::vector<Resource>& resources,
                           bool validate_only = false) {
  const bool flexible = key == 33 ? version >= 2 : version >= 1;
  auto a = ask(s, request(key, version, flexible, [&](Writer& w) {
                 w.array(static_cast<int32_t>(resources.size()));
                 for (const Resource& res : resources) {
                   w.i8(res.type);
                   w.str(res.name);
                   w.array(static_cast<int32_t>(res.configs.size()));
                   for (const Config& c : res.configs) {
                     w.str(c.name);
                     if (key == 44) w.i8(c.op);
                     w.nullable_str(c.value);
                     w.tags();
                   }
                   w.tags();
                 }
                 w.boolean(validate_only);
                 w.tags();
               }),
               flexible);
  Reader& r = a->r;
  CHECK(r.i32() == 0);  // throttle time
  std::vector<Outcome> out(static_cast<size_t>(r.array()));
  for (Outcome& o : out) {
    o.error = r.i16();
    o.message = std::string(r.nullable_str().value_or(""));
    o.type = r.i8();
    o.name = std::string(r.str());
    r.tags();
  }
  r.tags();
  CHECK_FALSE(r.failed());
  CHECK(r.at_end());
  return out;
}

struct Described {
  std::string value;
  bool is_default = false;
};

// DescribeConfigs v1 of one topic: each config's value and whether it is the default (source 5).
std::map<std::string, Described> describe(TestSocket& s, const std::string& topic) {
  auto a = ask(s, request(32, 1, false, [&](Writer& w) {
                 w.array(1);
                 w.i8(kTopic);
                 w.str(topic);
                 w.null_array();
                 w.boolean(false);
               }),
               false);
  Reader& r = a->r;
  r.i32();
  REQUIRE(r.array() == 1);
  CHECK(r.i16() == 0);
  r.nullable_str();
  r.i8();
  CHECK(r.str() == topic);
  std::map<std::string, Described> out;
  const int32_t n = r.array();
  for (int32_t i = 0; i < n; ++i) {
    std::string name(r.str());
    Described& d = out[name];
    d.value = std::string(r.nullable_str().value_or("<null>"));
    r.boolean();  // read only
    const int8_t source = r.i8();
    d.is_default = source == 5;
    CHECK((source == 5 || source == 1));
    r.boolean();  // sensitive
    CHECK(r.array() == 0);  // synonyms
  }
  CHECK(r.at_end());
  return out;
}

TEST_CASE("kafka config: AlterConfigs v0-v2 sets the configs it names and returns the others to their default") {
  KafkaDaemon d;
  TestSocket s(d.port());
  REQUIRE(create_topic_code(s, "t", 2, {{"retention.ms", "600000"}, {"segment.bytes", "1048576"}}) == 0);
  auto before = describe(s, "t");
  CHECK(before["retention.ms"].value == "600000");
  CHECK_FALSE(before["retention.ms"].is_default);

  for (int16_t v : {0, 1, 2}) {
    INFO("AlterConfigs v" << v);
    const std::string bytes = std::to_string(1000000 * (v + 1));
    auto out = alter(s, 33, v, {{kTopic, "t", {{"retention.bytes", bytes}, {"max.message.bytes", "2048"}}}});
    REQUIRE(out.size() == 1);
    CHECK(out[0].error == 0);
    CHECK(out[0].message.empty());
    CHECK(out[0].type == kTopic);
    CHECK(out[0].name == "t");
    auto now = describe(s, "t");
    CHECK(now["retention.bytes"].value == bytes);
    CHECK_FALSE(now["retention.bytes"].is_default);
    CHECK(now["max.message.bytes"].value == "2048");
    // Not named: back to the broker's default, as Kafka's AlterConfigs replaces the whole set.
    CHECK(now["retention.ms"].value == "-1");
    CHECK(now["retention.ms"].is_default);
    CHECK(now["segment.bytes"].value == "67108864");
    CHECK(now["message.timestamp.type"].value == "CreateTime");
  }
}

TEST_CASE("kafka config: AlterConfigs refuses each resource naming why, validate_only and refusals change nothing") {
  KafkaDaemon d;
  TestSocket s(d.port());
  for (const char* t : {"a", "b", "c", "d"}) {
    REQUIRE(create_topic_code(s, t, 1, {{"retention.ms", "600000"}}) == 0);
  }
  auto out = alter(s, 33, 1,
                   {{kTopic, "a", {{"cleanup.policy", "compact"}}},
                    {kTopic, "b", {{"retention.ms", "soon"}}},
                    {kTopic, "c", {{"message.timestamp.type", "createtime"}}},
                    {kTopic, "missing", {{"retention.ms", "1000"}}},
                    {kBroker, "0", {{"log.retention.ms", "1000"}}},
                    {kTopic, "d", {{"retention.bytes", "1000"}}},
                    {kTopic, "d", {{"retention.bytes", "2000"}}}});
  REQUIRE(out.size() == 7);
  CHECK(out[0].error == 40);  // INVALID_CONFIG
  CHECK(out[0].name == "a");
  CHECK(out[0].message.find("cleanup.policy") != std::string::npos);
  CHECK(out[1].error == 40);
  CHECK(out[1].message.find("retention.ms") != std::string::npos);
  CHECK(out[2].error == 40);
  CHECK(out[2].message.find("message.timestamp.type") != std::string::npos);
  CHECK(out[3].error == 3);  // UNKNOWN_TOPIC_OR_PARTITION
  CHECK(out[4].error == 42);  // INVALID_REQUEST
  CHECK(out[4].type == kBroker);
  CHECK(out[4].message.find("config file") != std::string::npos);
  CHECK(out[5].error == 42);  // "d" named twice: both refused
  CHECK(out[6].error == 42);
  for (const char* t : {"a", "b", "c", "d"}) CHECK(describe(s, t)["retention.ms"].value == "600000");

  // Checked as if made, and not made.
  auto checked = alter(s, 33, 2, {{kTopic, "a", {{"retention.ms", "1000"}}}}, true);
  REQUIRE(checked.size() == 1);
  CHECK(checked[0].error == 0);
  CHECK(describe(s, "a")["retention.ms"].value == "600000");
  auto refused = alter(s, 33, 2, {{kTopic, "a", {{"retention.ms", "0"}}}}, true);
  CHECK(refused[0].error == 40);
  CHECK(refused[0].message.find("retention.ms") != std::string::npos);
}

TEST_CASE("kafka config: IncrementalAlterConfigs v0-v1 sets and deletes one config at a time, leaving the others") {
  KafkaDaemon d;
  TestSocket s(d.port());
  REQUIRE(create_topic_code(s, "t", 1, {{"retention.ms", "600000"}, {"retention.bytes", "1000000"}}) == 0);

  auto set = alter(s, 44, 0, {{kTopic, "t", {{"retention.bytes", "2000000", kSet}}}});
  REQUIRE(set.size() == 1);
  CHECK(set[0].error == 0);
  auto now = describe(s, "t");
  CHECK(now["retention.bytes"].value == "2000000");
  CHECK(now["retention.ms"].value == "600000");  // not named: unchanged

  auto both = alter(s, 44, 1,
                    {{kTopic, "t", {{"retention.ms", std::nullopt, kDelete}, {"max.message.bytes", "4096", kSet}}}});
  CHECK(both[0].error == 0);
  now = describe(s, "t");
  CHECK(now["retention.ms"].value == "-1");
  CHECK(now["retention.ms"].is_default);
  CHECK(now["max.message.bytes"].value == "4096");
  CHECK(now["retention.bytes"].value == "2000000");

  // Nothing is a list: APPEND is refused; an unknown operation and a null SET are not requests.
  auto append = alter(s, 44, 1, {{kTopic, "t", {{"retention.ms", "5", kAppend}}}});
  CHECK(append[0].error == 40);
  CHECK(append[0].message.find("retention.ms") != std::string::npos);
  auto unknown_op = alter(s, 44, 1, {{kTopic, "t", {{"retention.ms", "5", 9}}}});
  CHECK(unknown_op[0].error == 42);
  auto null_set = alter(s, 44, 0, {{kTopic, "t", {{"retention.ms", std::nullopt, kSet}}}});
  CHECK(null_set[0].error == 42);
  auto unknown = alter(s, 44, 0, {{kTopic, "t", {{"no.such.config", std::nullopt, kDelete}}}});
  CHECK(unknown[0].error == 40);
  CHECK(unknown[0].message.find("no.such.config") != std::string::npos);
  CHECK(describe(s, "t")["retention.bytes"].value == "2000000");
}

TEST_CASE("kafka config: a change survives a restart, and the default is the broker's default policy") {
  KafkaDaemon d({"--default-policy.max-record-bytes", "1000"});
  TestSocket s(d.port());
  REQUIRE(create_topic_code(s, "t", 1) == 0);
  CHECK(describe(s, "t")["max.message.bytes"].value == "1000");
  CHECK(describe(s, "t")["max.message.bytes"].is_default);
  auto out = alter(s, 44, 1, {{kTopic, "t", {{"max.message.bytes", "5000", kSet}}}});
  CHECK(out[0].error == 0);
  REQUIRE(d.daemon.stop() == 0);
  REQUIRE(d.daemon.start());
  TestSocket again(d.port());
  auto now = describe(again, "t");
  CHECK(now["max.message.bytes"].value == "5000");
  CHECK_FALSE(now["max.message.bytes"].is_default);
  out = alter(again, 44, 1, {{kTopic, "t", {{"max.message.bytes", std::nullopt, kDelete}}}});
  CHECK(out[0].error == 0);
  CHECK(describe(again, "t")["max.message.bytes"].value == "1000");
}

}  // namespace
}  // namespace streamd::kafka
