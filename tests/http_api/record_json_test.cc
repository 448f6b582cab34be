#include "server/http_api/record_json.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd::http_api {
namespace {

JsonValue json(const char* text) {
  auto v = parse_json(text);
  REQUIRE(v.ok());
  return std::move(*v);
}

TEST_CASE("instants print as RFC 3339 UTC with microseconds and read back", "[record_json]") {
  CHECK(format_time(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(format_time(1'764'838'937'389'121) == "2025-12-04T09:02:17.389121Z");
  CHECK(format_time(-1) == "1969-12-31T23:59:59.999999Z");
  CHECK(parse_time("t", "2025-12-04T09:02:17.389121Z").value() == 1'764'838'937'389'121);
  CHECK(parse_time("t", "2025-12-04T10:02:17.389121+01:00").value() == 1'764'838'937'389'121);
  CHECK(parse_time("t", "2025-12-04T09:02:17Z").value() == 1'764'838'937'000'000);
  CHECK(parse_time("t", "2024-02-29T00:00:00.5Z").value() == 1'709'164'800'500'000);
  for (const char* bad : {"", "2025-12-04", "2025-12-04T09:02:17", "2025-13-04T09:02:17Z", "2025-12-04T09:02:17.Z",
                          "2025-12-04T25:02:17Z", "yesterday", "2025-12-04T09:02:17Zjunk"}) {
    INFO(bad);
    auto t = parse_time("from", bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == Code::kStreamMisconfigured);
    CHECK(t.status().field("field") == "from");
  }
}

TEST_CASE("a produce body gives keys, payloads and headers as text or base64", "[record_json]") {
  auto decoded = decode_records(json(R"({"records":[
      {"key":"k1","payload":"{\"a\":1}","headers":[{"name":"h","value":"v"},{"name":"bin","value_b64":"AP8="}]},
      {"payload_b64":"//79"},
      {}]})"));
  REQUIRE(decoded.ok());
  REQUIRE(decoded->records.size() == 3);
  CHECK(decoded->records[0].key == "k1");
  CHECK(decoded->records[0].payload == "{\"a\":1}");
  CHECK(decoded->records[0].headers[1].second == std::string("\x00\xff", 2));
  CHECK(decoded->records[1].payload == "\xff\xfe\xfd");
  CHECK(decoded->records[2].payload.empty());
  REQUIRE(decoded->inputs.size() == 3);
  CHECK(decoded->inputs[0].headers[0].name == "h");
}

TEST_CASE("a bad produce body is refused naming the field", "[record_json]") {
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "records"},
      {R"({"records":{}})", "records"},
      {R"({"records":[1]})", "records[0]"},
      {R"({"records":[{"key":"a","key_b64":"YQ=="}]})", "records[0].key"},
      {R"({"records":[{"payload_b64":"not base64"}]})", "records[0].payload_b64"},
      {R"({"records":[{"payload":5}]})", "records[0].payload"},
      {R"({"records":[{},{"value":"x"}]})", "records[1].value"},
      {R"({"records":[{"headers":[{"value":"x"}]}]})", "records[0].headers[0].name"},
      {R"({"records":[{"headers":"h"}]})", "records[0].headers"},
  };
  for (const auto& [body, field] : cases) {
    INFO(body);
    auto decoded = decode_records(json(body));
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.status().code() == Code::kStreamMisconfigured);
    CHECK(decoded.status().field("field") == field);
  }
}

TEST_CASE("a policy reads numbers and durations, and refuses unknown or negative fields", "[record_json]") {
  auto p = decode_policy(&static_cast<const JsonValue&>(json(
      R"({"partitions":3,"retain_for":"7d","block_timeout_ms":250,"max_bytes":1048576,"compact_after":"1h30m"})")));
  REQUIRE(p.ok());
  CHECK(p->partitions == 3);
  CHECK(p->retain_for == std::chrono::hours(24 * 7));
  CHECK(p->block_timeout == std::chrono::milliseconds(250));
  CHECK(p->max_bytes == 1048576);
  CHECK(p->compact_after == std::chrono::minutes(90));
  CHECK(decode_policy(nullptr).ok());
  auto typed = decode_policy(&static_cast<const JsonValue&>(json(R"({"timestamp_type":"LogAppendTime"})")));
  REQUIRE(typed.ok());
  CHECK(typed->timestamp_type == TimestampType::kLogAppendTime);
  const std::pair<const char*, const char*> bad[] = {{R"({"partitions":-1})", "partitions"},
                                                     {R"({"retain_for":"soon"})", "retain_for"},
                                                     {R"({"retain_for":5})", "retain_for"},
                                                     {R"({"colour":"blue"})", "colour"},
                                                     {R"({"timestamp_type":"createtime"})", "timestamp_type"},
                                                     {R"({"timestamp_type":1})", "timestamp_type"}};
  for (const auto& [body, field] : bad) {
    INFO(body);
    JsonValue v = json(body);
    auto r = decode_policy(&v);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().field("field") == field);
  }
}

TEST_CASE("a policy answers its timestamp type by Kafka's name", "[record_json]") {
  Policy p;
  p.timestamp_type = TimestampType::kLogAppendTime;
  JsonWriter w;
  write_policy(w, p.normalized());
  CHECK(w.str().find(R"("timestamp_type":"LogAppendTime")") != std::string::npos);
  JsonWriter d;
  write_policy(d, Policy{}.normalized());
  CHECK(d.str().find(R"("timestamp_type":"CreateTime")") != std::string::npos);
}

TEST_CASE("an entry shows a producer's timestamp only when it has one, and nulls as empty", "[record_json]") {
  EntryView e;
  e.offset = Offset(4);
  e.appended_at = Timestamp(1'764'838'937'389'121);
  e.key_null = true;
  e.payload = "v";
  JsonWriter plain;
  write_entry(plain, PartitionId(1), e);
  CHECK(plain.str().find("create_time") == std::string::npos);
  CHECK(plain.str().find(R"("key":"","payload":"v")") != std::string::npos);
  e.create_time = CreateTime(1'500'000'000'123);
  JsonWriter timed;
  write_entry(timed, PartitionId(1), e);
  CHECK(timed.str().find(R"("appended_at":"2025-12-04T09:02:17.389121Z","create_time":"2017-07-14T02:40:00.123000Z")") !=
        std::string::npos);
}

}  // namespace
}  // namespace streamd::http_api
