#include "server/broker/routing.h"

#include <catch2/catch.hpp>

#include "proto/placement.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::check_error;
using testing::inputs;
using testing::Rec;

// Two keys of each partition among 4, found by the placement rule itself.
std::string key_in(int32_t partition, int nth = 0) {
  for (int i = 0, seen = 0;; ++i) {
    std::string key = "key-" + std::to_string(i);
    if (placement::partition_of(key, 4) == partition && seen++ == nth) return key;
  }
}

Result<PartitionId> route(const std::vector<Rec>& records, std::atomic<uint64_t>& rotation,
                          int64_t max_record_bytes = 100) {
  return route_batch("s", inputs(records), 4, max_record_bytes, rotation);
}

TEST_CASE("a batch goes to the partition of its first keyed record, unkeyed records follow it") {
  std::atomic<uint64_t> rotation{0};
  struct Case {
    std::vector<Rec> records;
    int32_t partition;
  };
  auto c = GENERATE(Case{{{key_in(2), "x"}}, 2}, Case{{{"", "u"}, {key_in(1), "x"}, {"", "v"}}, 1},
                    Case{{{key_in(3), "a"}, {key_in(3, 1), "b"}, {key_in(3), ""}}, 3},
                    Case{{{"", ""}, {"", ""}, {key_in(0), "x"}}, 0});
  auto p = route(c.records, rotation);
  REQUIRE(p.ok());
  CHECK(p->value == c.partition);
  CHECK(rotation.load() == 0);
}

TEST_CASE("all-unkeyed batches take the partitions in turn") {
  std::atomic<uint64_t> rotation{0};
  std::vector<int32_t> seen;
  for (int i = 0; i < 9; ++i) seen.push_back(route({{"", "u"}}, rotation)->value);
  CHECK(seen == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0});
}

TEST_CASE("all-unkeyed batches take the partitions of this broker's share in turn") {
  auto taken = [](int32_t partitions, RotationShare share) {
    std::atomic<uint64_t> rotation{0};
    std::vector<int32_t> seen;
    for (int i = 0; i < 6; ++i)
      seen.push_back(route_batch("s", inputs({{"", "u"}}), partitions, 100, rotation, share)->value);
    return seen;
  };
  CHECK(taken(8, {1, 3}) == std::vector<int32_t>{1, 4, 7, 1, 4, 7});
  CHECK(taken(8, {2, 3}) == std::vector<int32_t>{2, 5, 2, 5, 2, 5});
  CHECK(taken(4, {0, 1}) == std::vector<int32_t>{0, 1, 2, 3, 0, 1});
  // A share the stream has no partition of, or a nonsensical one, takes every partition.
  CHECK(taken(2, {2, 3}) == std::vector<int32_t>{0, 1, 0, 1, 0, 1});
  CHECK(taken(3, {0, 0}) == std::vector<int32_t>{0, 1, 2, 0, 1, 2});
  // Keyed batches go where their key does, whatever the share.
  std::atomic<uint64_t> rotation{0};
  CHECK(route_batch("s", inputs({{key_in(2), "k"}}), 4, 100, rotation, {1, 2})->value == 2);
}

TEST_CASE("an empty batch is INVALID_BATCH_SIZE") {
  std::atomic<uint64_t> rotation{0};
  check_error(route({}, rotation).status(), Code::kInvalidBatchSize, {{"stream", "s"}, {"records", "0"}});
}

TEST_CASE("a record over max_record_bytes refuses the batch with its index and both sizes") {
  std::atomic<uint64_t> rotation{0};
  // key + payload + header names and values count; exactly the limit is accepted.
  CHECK(route({{"k", std::string(99, 'x')}}, rotation).ok());
  check_error(route({{"", "ok"}, {"k", std::string(100, 'x')}, {"", std::string(500, 'x')}}, rotation).status(),
              Code::kRecordTooLarge, {{"stream", "s"}, {"index", "1"}, {"size", "101"}, {"limit", "100"}});
  std::vector<RecordInput> with_headers{{"", "p", {{"name", std::string(100, 'v')}}}};
  check_error(route_batch("s", with_headers, 4, 100, rotation).status(), Code::kRecordTooLarge,
              {{"index", "0"}, {"size", "105"}});
}

TEST_CASE("keyed records of different partitions are PARTITIONS_MIXED, naming the first one off") {
  std::atomic<uint64_t> rotation{0};
  check_error(route({{"", "u"}, {key_in(1), "a"}, {key_in(1, 1), "b"}, {key_in(2), "c"}}, rotation).status(),
              Code::kPartitionsMixed,
              {{"stream", "s"}, {"index", "3"}, {"record_partition", "2"}, {"partition", "1"},
               {"first_keyed_index", "1"}, {"partitions", "4"}});
  CHECK(rotation.load() == 0);
}

TEST_CASE("an error never carries record bytes") {
  std::atomic<uint64_t> rotation{0};
  const std::string secret = "SECRET-KEY";
  for (const Status& s : {route({{secret, std::string(200, 'P')}}, rotation).status(),
                          route({{secret, "x"}, {key_in(placement::partition_of(secret, 4) == 0 ? 1 : 0), "y"}}, rotation).status()}) {
    REQUIRE_FALSE(s.ok());
    CHECK(s.to_string().find(secret) == std::string::npos);
    CHECK(s.to_string().find("PPPP") == std::string::npos);
  }
}

}  // namespace
}  // namespace streamd
