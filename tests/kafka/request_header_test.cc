// server/kafka/request_header.h and the API table: what is parsed, refused and advertised.
#include "server/kafka/request_header.h"

#include <catch2/catch.hpp>

#include "server/kafka/codec.h"
#include "server/kafka/handlers.h"

namespace streamd::kafka {
namespace {

std::string header(int16_t key, int16_t version, int32_t correlation, std::optional<std::string_view> client,
                   bool tagged = false) {
  std::string out;
  Writer w(out);
  w.i16(key);
  w.i16(version);
  w.i32(correlation);
  w.nullable_string(client);
  if (tagged) w.empty_tagged_fields();
  return out;
}

TEST_CASE("a v1 header gives key, version, correlation id, client id and the body after it") {
  const std::string frame = header(3, 7, 42, "kcat") + "BODY";
  ParsedHeader p = parse_request(frame);
  REQUIRE(p.status == HeaderStatus::kOk);
  CHECK(p.header.api_key == 3);
  CHECK(p.header.api_version == 7);
  CHECK(p.header.correlation_id == 42);
  CHECK(p.header.client_id == "kcat");
  CHECK(p.body == "BODY");
}

TEST_CASE("response header v1 carries tagged fields after the correlation id, v0 does not") {
  std::string v0 = start_response(7);
  std::string v1 = start_response(7, true);
  CHECK(v0.size() == kResponsePrefix);
  CHECK(v1.size() == kResponsePrefix + 1);
  CHECK(v1.back() == '\0');  // an empty set of tagged fields
  finish_response(v1);
  Reader r(v1);
  CHECK(r.i32() == 5);
  CHECK(r.i32() == 7);
}

TEST_CASE("a flexible version's header skips its tagged fields, a null client id is empty") {
  const std::string frame = header(18, 3, 1, std::nullopt, true) + "X";
  ParsedHeader p = parse_request(frame);
  REQUIRE(p.status == HeaderStatus::kOk);
  CHECK(p.header.client_id.empty());
  CHECK(p.body == "X");
}

TEST_CASE("unknown keys, versions outside the table and short headers are refused") {
  CHECK(parse_request(header(27, 0, 1, "x")).status == HeaderStatus::kUnknownApi);  // WriteTxnMarkers
  CHECK(parse_request(header(1, 3, 1, "x")).status == HeaderStatus::kUnsupportedVersion);  // Fetch v3
  CHECK(parse_request(header(1, 12, 1, "x")).status == HeaderStatus::kUnsupportedVersion);
  auto unsupported = parse_request(header(18, 4, 77, "x"));
  CHECK(unsupported.status == HeaderStatus::kUnsupportedVersion);
  CHECK(unsupported.header.correlation_id == 77);  // read anyway, for the answer
  CHECK(parse_request(std::string("\x00\x03\x00", 3)).status == HeaderStatus::kMalformed);
  std::string bad_client = header(3, 1, 1, std::nullopt);
  bad_client[8] = 0x10;  // a client id longer than the frame
  CHECK(parse_request(bad_client).status == HeaderStatus::kMalformed);
}

TEST_CASE("the table holds the issue's version ranges, and the transaction APIs below KIP-890's") {
  struct Range {
    ApiKey key;
    int16_t min, max;
  };
  const std::vector<Range> expected = {
      {ApiKey::kApiVersions, 0, 3},    {ApiKey::kMetadata, 0, 7},      {ApiKey::kProduce, 0, 7},
      {ApiKey::kFetch, 4, 11},         {ApiKey::kListOffsets, 0, 3},   {ApiKey::kFindCoordinator, 0, 2},
      {ApiKey::kJoinGroup, 0, 5},      {ApiKey::kSyncGroup, 0, 3},     {ApiKey::kHeartbeat, 0, 3},
      {ApiKey::kLeaveGroup, 0, 3},     {ApiKey::kOffsetCommit, 0, 7},  {ApiKey::kOffsetFetch, 0, 7},
      {ApiKey::kCreateTopics, 0, 4},   {ApiKey::kDeleteTopics, 0, 3},  {ApiKey::kDescribeConfigs, 0, 2},
      {ApiKey::kListGroups, 0, 4},     {ApiKey::kDescribeGroups, 0, 5}, {ApiKey::kDeleteGroups, 0, 2},
      {ApiKey::kOffsetDelete, 0, 0},   {ApiKey::kDescribeCluster, 0, 1}, {ApiKey::kDescribeLogDirs, 0, 4},
      {ApiKey::kDescribeAcls, 0, 3},   {ApiKey::kCreateAcls, 0, 3},    {ApiKey::kDeleteAcls, 0, 3},
      {ApiKey::kCreatePartitions, 0, 3}, {ApiKey::kElectLeaders, 0, 2}, {ApiKey::kDescribeProducers, 0, 0},
      {ApiKey::kInitProducerId, 0, 4}, {ApiKey::kAddPartitionsToTxn, 0, 2}, {ApiKey::kAddOffsetsToTxn, 0, 2},
      {ApiKey::kEndTxn, 0, 2},         {ApiKey::kTxnOffsetCommit, 0, 3},
      {ApiKey::kAlterConfigs, 0, 2},   {ApiKey::kIncrementalAlterConfigs, 0, 1},
  };
  // Flexible versions start where Kafka's do (KIP-482), so the codec's mode follows the version.
  const std::vector<std::pair<ApiKey, int16_t>> flexible_from = {
      {ApiKey::kApiVersions, 3},      {ApiKey::kOffsetFetch, 6},  {ApiKey::kListGroups, 3},
      {ApiKey::kDescribeGroups, 5},   {ApiKey::kDeleteGroups, 2}, {ApiKey::kDescribeCluster, 0},
      {ApiKey::kDescribeLogDirs, 2},  {ApiKey::kDescribeAcls, 2}, {ApiKey::kCreatePartitions, 2},
      {ApiKey::kDescribeProducers, 0}, {ApiKey::kElectLeaders, 2},   {ApiKey::kInitProducerId, 2},
      {ApiKey::kAlterConfigs, 2},      {ApiKey::kIncrementalAlterConfigs, 1}, {ApiKey::kTxnOffsetCommit, 3},
  };
  for (const auto& [key, from] : flexible_from) {
    const ApiInfo* api = find_api(static_cast<int16_t>(key));
    REQUIRE(api != nullptr);
    INFO(api->name);
    CHECK(api->flexible_from == from);
  }
  for (const Range& r : expected) {
    const ApiInfo* api = find_api(static_cast<int16_t>(r.key));
    REQUIRE(api != nullptr);
    INFO(api->name);
    CHECK(api->min_version == r.min);
    CHECK(api->max_version == r.max);
  }
  // WriteTxnMarkers is broker to broker, and the transaction admin APIs (KIP-664) are not offered.
  for (int16_t key : {27, 65, 66}) CHECK(find_api(key) == nullptr);
  // The SASL APIs are rows too, offered only where SASL is configured.
  for (ApiKey key : {ApiKey::kSaslHandshake, ApiKey::kSaslAuthenticate}) {
    const ApiInfo* api = find_api(static_cast<int16_t>(key));
    REQUIRE(api != nullptr);
    CHECK(api->sasl);
    CHECK(api->max_version == 1);
  }
}

TEST_CASE("every row of the API table is one API, in key order, with a handler and a range") {
  // A row of zeros would read as a second Produce 0..0, and a client that looks its APIs up by a
  // binary search (librdkafka) could then find no usable Produce at all.
  int prev = -1;
  for (const ApiInfo& api : api_table()) {
    INFO(api.name);
    CHECK(api.handler != nullptr);
    CHECK(static_cast<int>(api.key) > prev);
    CHECK(api.min_version <= api.max_version);
    prev = static_cast<int>(api.key);
  }
}

TEST_CASE("ApiVersions' refusal is v0 with error 35 and every row of the table, SASL's only with SASL") {
  for (bool sasl : {false, true}) {
    INFO("sasl " << sasl);
    std::string frame = unsupported_api_versions_answer(9, sasl);
    finish_response(frame);
    Reader r(frame);
    CHECK(r.i32() == static_cast<int32_t>(frame.size() - 4));
    CHECK(r.i32() == 9);
    CHECK(r.i16() == 35);
    const int32_t n = r.count(6);
    CHECK(n == static_cast<int32_t>(api_table().size()) - (sasl ? 0 : 2));
    for (const ApiInfo& api : api_table()) {
      if (api.sasl && !sasl) continue;
      CHECK(r.i16() == static_cast<int16_t>(api.key));
      CHECK(r.i16() == api.min_version);
      CHECK(r.i16() == api.max_version);
    }
    CHECK(r.at_end());  // v0: no throttle time
  }
}

}  // namespace
}  // namespace streamd::kafka
