// The admin, group and cluster APIs at the byte level, over raw sockets to the real daemon,
// including their flexible versions (KIP-482: request header v2, response header v1, compact
// encodings, tagged fields — unknown ones in requests skipped): what consoles and admin clients send.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/kafka/codec.h"
#include "tests/kafka/admin_wire.h"
#include "tests/kafka/batch_helpers.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::kafka {
namespace {

using streamd::testing::TestSocket;
using testing::ask;
using testing::KafkaDaemon;
using testing::request;

void create_topic(TestSocket& s, const std::string& topic, int32_t partitions) {
  CHECK(testing::create_topic_code(s, topic, partitions) == 0);
}

// OffsetCommit v2 of one partition, simple (generation -1, no member): the error.
int16_t commit(TestSocket& s, const std::string& group, const std::string& topic, int32_t partition, int64_t offset,
               std::optional<std::string_view> metadata) {
  auto a = ask(s, request(8, 2, false, [&](Writer& w) {
                 w.str(group);
                 w.i32(-1);
                 w.str("");
                 w.i64(-1);
                 w.array(1);
                 w.str(topic);
                 w.array(1);
                 w.i32(partition);
                 w.i64(offset);
                 w.nullable_str(metadata);
               }),
               false);
  Reader& r = a->r;
  r.count();
  r.string();
  r.count();
  r.i32();
  return r.i16();
}

// OffsetFetch at `version` of one partition: offset and metadata.
std::pair<int64_t, std::string> fetch_offset(TestSocket& s, int16_t version, const std::string& group,
                                             const std::string& topic, int32_t partition) {
  const bool flexible = version >= 6;
  auto a = ask(s, request(9, version, flexible, [&](Writer& w) {
                 w.str(group);
                 w.array(1);
                 w.str(topic);
                 w.array(1);
                 w.i32(partition);
                 w.tags();
                 if (version >= 7) w.boolean(false);
                 w.tags();
               }),
               flexible);
  Reader& r = a->r;
  if (version >= 3) r.i32();
  REQUIRE(r.array() == 1);
  CHECK(r.str() == topic);
  REQUIRE(r.array() == 1);
  CHECK(r.i32() == partition);
  const int64_t offset = r.i64();
  if (version >= 5) r.i32();
  std::string metadata(r.nullable_str().value_or("<null>"));
  CHECK(r.i16() == 0);
  r.tags();
  r.tags();
  if (version >= 2) CHECK(r.i16() == 0);
  r.tags();
  CHECK_FALSE(r.failed());
  CHECK(r.at_end());
  return {offset, metadata};
}

TEST_CASE("kafka admin: OffsetCommit keeps an offset past the end with its metadata, OffsetFetch v1-v7 return it") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "empty", 1);
  CHECK(commit(s, "g", "empty", 0, 42, "where I was") == 0);
  for (int16_t v : {1, 5, 6, 7}) {
    INFO("OffsetFetch v" << v);
    CHECK(fetch_offset(s, v, "g", "empty", 0) == std::pair<int64_t, std::string>{42, "where I was"});
  }
  // A null metadata keeps none; -1 removes the commit; over 4096 bytes is refused and changes nothing.
  CHECK(commit(s, "g", "empty", 0, 7, std::nullopt) == 0);
  CHECK(fetch_offset(s, 6, "g", "empty", 0) == std::pair<int64_t, std::string>{7, ""});
  CHECK(commit(s, "g", "empty", 0, 8, std::string(4097, 'm')) == 12);  // OFFSET_METADATA_TOO_LARGE
  CHECK(fetch_offset(s, 6, "g", "empty", 0).first == 7);
  CHECK(commit(s, "g", "empty", 0, -1, std::nullopt) == 0);
  CHECK(fetch_offset(s, 6, "g", "empty", 0).first == -1);
  CHECK(commit(s, "g", "empty", 0, -2, std::nullopt) == 1);  // OFFSET_OUT_OF_RANGE
}

// ListGroups at `version`: (group, state) pairs ("" below v4).
std::vector<std::pair<std::string, std::string>> list_groups(TestSocket& s, int16_t version,
                                                             std::vector<std::string> states = {}) {
  const bool flexible = version >= 3;
  auto a = ask(s, request(16, version, flexible, [&](Writer& w) {
                 if (version >= 4) {
                   w.array(static_cast<int32_t>(states.size()));
                   for (const auto& st : states) w.str(st);
                 }
                 w.tags();
               }),
               flexible);
  Reader& r = a->r;
  if (version >= 1) r.i32();
  CHECK(r.i16() == 0);
  std::vector<std::pair<std::string, std::string>> out;
  const int32_t n = r.array();
  for (int32_t i = 0; i < n; ++i) {
    std::string id(r.str());
    CHECK(r.str() == "consumer");
    std::string state = version >= 4 ? std::string(r.str()) : std::string();
    r.tags();
    out.emplace_back(std::move(id), std::move(state));
  }
  r.tags();
  CHECK_FALSE(r.failed());
  CHECK(r.at_end());
  return out;
}

// DeleteGroups at `version`: each group's error.
std::vector<int16_t> delete_groups(TestSocket& s, int16_t version, const std::vector<std::string>& groups) {
  const bool flexible = version >= 2;
  auto a = ask(s, request(42, version, flexible, [&](Writer& w) {
                 w.array(static_cast<int32_t>(groups.size()));
                 for (const auto& g : groups) w.str(g);
                 w.tags();
               }),
               flexible);
  Reader& r = a->r;
  r.i32();
  std::vector<int16_t> out;
  const int32_t n = r.array();
  for (int32_t i = 0; i < n; ++i) {
    CHECK(r.str() == groups[static_cast<size_t>(i)]);
    out.push_back(r.i16());
    r.tags();
  }
  r.tags();
  CHECK(r.at_end());
  return out;
}

TEST_CASE("kafka admin: ListGroups v4 gives states and filters by them, DeleteGroups removes a group's offsets") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "t", 2);
  CHECK(commit(s, "gone", "t", 0, 1, "m") == 0);
  CHECK(commit(s, "gone", "t", 1, 2, "m") == 0);
  CHECK(commit(s, "kept", "t", 0, 3, std::nullopt) == 0);
  using L = std::vector<std::pair<std::string, std::string>>;
  CHECK(list_groups(s, 2) == L{{"gone", ""}, {"kept", ""}});
  CHECK(list_groups(s, 3) == L{{"gone", ""}, {"kept", ""}});
  CHECK(list_groups(s, 4) == L{{"gone", "Empty"}, {"kept", "Empty"}});
  CHECK(list_groups(s, 4, {"stable"}).empty());
  CHECK(list_groups(s, 4, {"Stable", "empty"}).size() == 2);
  for (int16_t v : {0, 2}) {
    INFO("DeleteGroups v" << v);
    CHECK(delete_groups(s, v, {"nobody"}) == std::vector<int16_t>{69});  // GROUP_ID_NOT_FOUND
  }
  CHECK(delete_groups(s, 2, {"gone"}) == std::vector<int16_t>{0});
  CHECK(list_groups(s, 4) == L{{"kept", "Empty"}});
  CHECK(fetch_offset(s, 6, "gone", "t", 1).first == -1);
  CHECK(fetch_offset(s, 6, "kept", "t", 0).first == 3);
}

TEST_CASE("kafka admin: OffsetDelete removes one partition's commit, an unknown group is GROUP_ID_NOT_FOUND") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "t", 2);
  CHECK(commit(s, "g", "t", 0, 1, std::nullopt) == 0);
  CHECK(commit(s, "g", "t", 1, 1, std::nullopt) == 0);
  auto offset_delete = [&](const std::string& group) {
    auto a = ask(s, request(47, 0, false, [&](Writer& w) {
                   w.str(group);
                   w.array(1);
                   w.str("t");
                   w.array(1);
                   w.i32(0);
                 }),
                 false);
    std::pair<int16_t, int16_t> out{a->r.i16(), -100};
    a->r.i32();
    if (a->r.count() == 1) {
      a->r.string();
      a->r.count();
      a->r.i32();
      out.second = a->r.i16();
    }
    return out;
  };
  CHECK(offset_delete("g") == std::pair<int16_t, int16_t>{0, 0});
  CHECK(fetch_offset(s, 6, "g", "t", 0).first == -1);
  CHECK(fetch_offset(s, 6, "g", "t", 1).first == 1);
  CHECK(offset_delete("unknown").first == 69);
}

TEST_CASE("kafka admin: DescribeCluster v0-1 and DescribeLogDirs v1-v4 describe this one broker") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "sized", 2);
  for (int16_t v : {0, 1}) {
    INFO("DescribeCluster v" << v);
    auto a = ask(s, request(60, v, true, [&](Writer& w) {
                   w.boolean(false);
                   if (v >= 1) w.i8(1);
                   w.tags();
                 }),
                 true);
    Reader& r = a->r;
    r.i32();
    CHECK(r.i16() == 0);
    CHECK_FALSE(r.nullable_str().has_value());
    if (v >= 1) CHECK(r.i8() == 1);
    CHECK(r.str() == "streamd");
    CHECK(r.i32() == 0);  // the controller: node 0
    REQUIRE(r.array() == 1);
    CHECK(r.i32() == 0);
    CHECK(r.str() == "127.0.0.1");
    CHECK(r.i32() == d.port());
    CHECK_FALSE(r.nullable_str().has_value());
    r.tags();
    r.i32();
    r.tags();
    CHECK(r.at_end());
    CHECK_FALSE(r.failed());
  }
  for (int16_t v : {1, 2, 4}) {
    INFO("DescribeLogDirs v" << v);
    const bool flexible = v >= 2;
    auto a = ask(s, request(35, v, flexible, [&](Writer& w) {
                   w.null_array();  // every topic
                   w.tags();
                 }),
                 flexible);
    Reader& r = a->r;
    r.i32();
    if (v >= 3) CHECK(r.i16() == 0);
    REQUIRE(r.array() == 1);
    CHECK(r.i16() == 0);
    CHECK_FALSE(r.str().empty());
    REQUIRE(r.array() == 1);
    CHECK(r.str() == "sized");
    CHECK(r.array() == 2);
    for (int p = 0; p < 2; ++p) {
      CHECK(r.i32() == p);
      CHECK(r.i64() >= 0);
      CHECK(r.i64() == 0);
      CHECK_FALSE(r.boolean());
      r.tags();
    }
    r.tags();
    if (v >= 4) {
      CHECK(r.i64() > 0);  // the data directory's file system
      CHECK(r.i64() >= 0);
    }
    r.tags();
    r.tags();
    CHECK(r.at_end());
    CHECK_FALSE(r.failed());
  }
}

TEST_CASE("kafka admin: CreatePartitions is refused per topic naming why, ACLs without an access file are disabled") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "fixed", 3);
  for (int16_t v : {0, 2, 3}) {
    INFO("CreatePartitions v" << v);
    const bool flexible = v >= 2;
    auto a = ask(s, request(37, v, flexible, [&](Writer& w) {
                   w.array(2);
                   w.str("fixed");
                   w.i32(6);
                   w.null_array();
                   w.tags();
                   w.str("missing");
                   w.i32(2);
                   w.null_array();
                   w.tags();
                   w.i32(1000);
                   w.boolean(false);
                   w.tags();
                 }),
                 flexible);
    Reader& r = a->r;
    r.i32();
    REQUIRE(r.array() == 2);
    CHECK(r.str() == "fixed");
    CHECK(r.i16() == 37);  // INVALID_PARTITIONS
    CHECK(std::string(r.nullable_str().value_or("")).find("fixed for its life") != std::string::npos);
    r.tags();
    CHECK(r.str() == "missing");
    CHECK(r.i16() == 3);  // UNKNOWN_TOPIC_OR_PARTITION
    r.nullable_str();
    r.tags();
    r.tags();
    CHECK(r.at_end());
  }
  for (int16_t v : {1, 2}) {
    INFO("DescribeAcls v" << v);
    const bool flexible = v >= 2;
    auto a = ask(s, request(29, v, flexible, [&](Writer& w) {
                   w.i8(1);
                   w.nullable_str(std::nullopt);
                   w.i8(1);
                   w.nullable_str(std::nullopt);
                   w.nullable_str(std::nullopt);
                   w.i8(1);
                   w.i8(1);
                   w.tags();
                 }),
                 flexible);
    a->r.i32();
    CHECK(a->r.i16() == 54);  // SECURITY_DISABLED
    CHECK(std::string(a->r.nullable_str().value_or("")).find("access file") != std::string::npos);
    CHECK(a->r.array() == 0);
  }
}

TEST_CASE("kafka admin: ElectLeaders needs no election, DescribeProducers finds none active") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "t", 1);
  auto a = ask(s, request(43, 2, true, [&](Writer& w) {
                 w.i8(0);
                 w.array(1);
                 w.str("t");
                 w.array(1);
                 w.i32(0);
                 w.tags();
                 w.i32(1000);
                 w.tags();
               }),
               true);
  a->r.i32();
  CHECK(a->r.i16() == 0);
  REQUIRE(a->r.array() == 1);
  CHECK(a->r.str() == "t");
  REQUIRE(a->r.array() == 1);
  CHECK(a->r.i32() == 0);
  CHECK(a->r.i16() == 84);  // ELECTION_NOT_NEEDED
  auto p = ask(s, request(61, 0, true, [&](Writer& w) {
                 w.array(1);
                 w.str("t");
                 w.array(1);
                 w.i32(0);
                 w.tags();
                 w.tags();
               }),
               true);
  p->r.i32();
  REQUIRE(p->r.array() == 1);
  CHECK(p->r.str() == "t");
  REQUIRE(p->r.array() == 1);
  CHECK(p->r.i32() == 0);
  CHECK(p->r.i16() == 0);
  p->r.nullable_str();
  CHECK(p->r.array() == 0);
}

}  // namespace
}  // namespace streamd::kafka
