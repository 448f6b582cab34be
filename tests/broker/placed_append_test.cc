// Broker::append_to_partition: the producer's own choice of partition (the Kafka listener's path).
#include <catch2/catch.hpp>
#include <future>

#include "proto/placement.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::BrokerFixture;
using testing::inputs;
using testing::Rec;

Result<AppendResult> placed(BrokerFixture& f, const std::string& stream, int32_t partition, bool enforce,
                            const std::vector<Rec>& records) {
  std::promise<Result<AppendResult>> done;
  f.broker->append_to_partition(stream, PartitionId(partition), enforce, inputs(records),
                                [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

Policy with_partitions(int32_t n) {
  Policy p;
  p.partitions = n;
  return p;
}

// A key that partition_of places elsewhere than `partition` among `n`.
std::string key_off(int32_t partition, int32_t n) {
  for (int i = 0;; ++i) {
    std::string k = "key-" + std::to_string(i);
    if (placement::partition_of(k, n) != partition) return k;
  }
}

ENGINE_TEST_CASE("a placed batch goes to the partition named, whatever its keys hash to") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", with_partitions(3));
  const std::string key = key_off(2, 3);
  auto r = placed(f, "s", 2, false, {{key, "a"}, {"", "b"}});
  REQUIRE(r.ok());
  CHECK(r->partition == PartitionId(2));
  CHECK(r->range == AppendRange{Offset(0), Offset(1)});
  CHECK(f.read("s", 2) == std::vector<std::pair<uint64_t, std::string>>{{0, "a"}, {1, "b"}});
}

ENGINE_TEST_CASE("enforce_placement refuses a keyed record off its partition and writes nothing") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", with_partitions(3));
  const std::string off = key_off(1, 3);
  auto r = placed(f, "s", 1, true, {{"", "unkeyed"}, {off, "x"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kPartitionsMixed);
  CHECK(r.status().field("index") == "1");
  CHECK(f.bounds("s", 1).next == Offset(0));
  // The same batch on the key's own partition is accepted.
  auto ok = placed(f, "s", placement::partition_of(off, 3), true, {{"", "unkeyed"}, {off, "x"}});
  CHECK(ok.ok());
}

ENGINE_TEST_CASE("a placed batch is refused for an unknown stream or partition, empty or oversized") {
  BrokerFixture f(TestType::kEngine);
  Policy p = with_partitions(2);
  p.max_record_bytes = 10;
  f.create("s", p);
  CHECK(placed(f, "nope", 0, false, {{"", "a"}}).status().code() == Code::kStreamNotFound);
  CHECK(placed(f, "s", 2, false, {{"", "a"}}).status().code() == Code::kUnknownPartition);
  CHECK(placed(f, "s", -1, false, {{"", "a"}}).status().code() == Code::kUnknownPartition);
  CHECK(placed(f, "s", 0, false, {}).status().code() == Code::kInvalidBatchSize);
  CHECK(placed(f, "s", 0, false, {{"", std::string(11, 'x')}}).status().code() == Code::kRecordTooLarge);
  CHECK(f.bounds("s", 0).next == Offset(0));
}

}  // namespace
}  // namespace streamd
