// Append through the broker: routing, offsets, and backpressure (max_bytes, block_timeout).
#include <catch2/catch.hpp>
#include <atomic>
#include <future>
#include <thread>

#include "proto/placement.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::Rec;

Policy partitions(int32_t n) {
  Policy p;
  p.partitions = n;
  return p;
}

ENGINE_TEST_CASE("a keyed batch lands on its key's partition with consecutive offsets and one instant") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", partitions(4));
  const std::string key = "customer-42";
  const int32_t expected = placement::partition_of(key, 4);
  auto first = f.append("s", {{key, "a"}, {"", "b"}, {key, "c"}});
  CHECK(first.partition == PartitionId(expected));
  CHECK(first.range == AppendRange{Offset(0), Offset(2)});
  f.clock.advance(milliseconds(5));
  auto second = f.append("s", {{key, "d"}});
  CHECK(second.range == AppendRange{Offset(3), Offset(3)});

  auto read = f.broker->read("s", {{PartitionId(expected), Offset(0)}}, 10, 0);
  REQUIRE(read.ok());
  const auto& entries = (*read)[0].result.entries;
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].appended_at == entries[2].appended_at);
  CHECK(entries[3].appended_at > entries[0].appended_at);
  CHECK(entries[1].key.empty());
  CHECK(entries[1].payload == "b");
}

ENGINE_TEST_CASE("PARTITIONS_MIXED writes nothing") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", partitions(4));
  std::string a = "a", b = "b";
  for (int i = 0; placement::partition_of(b, 4) == placement::partition_of(a, 4); ++i) b = "b" + std::to_string(i);
  check_error(f.try_append("s", {{a, "1"}, {b, "2"}}).status(), Code::kPartitionsMixed,
              {{"stream", "s"}, {"index", "1"}});
  for (int32_t p = 0; p < 4; ++p) CHECK(f.bounds("s", p) == Bounds{});
}

ENGINE_TEST_CASE("all-unkeyed batches rotate over the partitions, one rotation per stream for every producer") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", partitions(3));
  f.create("t", partitions(3));
  std::vector<int32_t> seen;
  for (int i = 0; i < 6; ++i) {
    seen.push_back(f.append("s", {{"", "x"}}).partition.value);
    f.append("t", {{"", "y"}});  // another stream's rotation does not move this one
  }
  CHECK(seen == std::vector<int32_t>{0, 1, 2, 0, 1, 2});
}

ENGINE_TEST_CASE("the batch's record limit is the stream's max_record_bytes") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.max_record_bytes = 8;
  f.create("s", policy);
  check_error(f.try_append("s", {{"k", "12345678"}}).status(), Code::kRecordTooLarge,
              {{"stream", "s"}, {"index", "0"}, {"size", "9"}, {"limit", "8"}});
  CHECK(f.bounds("s", 0) == Bounds{});
}

// A stream of one-batch segments: every append of kPayload bytes rolls a segment, so trim frees whole
// segments. max_bytes is reached by the third append.
constexpr size_t kPayload = 120;

Policy bounded(milliseconds block_timeout) {
  Policy p;
  p.max_record_bytes = 200;
  p.max_bytes = 400;
  p.segment_bytes = 200;
  p.block_timeout = block_timeout;
  return p;
}

void fill(BrokerFixture& f) {
  for (int i = 0; i < 3; ++i) f.append("s", {{"", std::string(kPayload, 'a' + static_cast<char>(i))}});
}

ENGINE_TEST_CASE("a full stream with no block_timeout refuses at once, with nothing written") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", bounded(milliseconds(0)));
  fill(f);
  check_error(f.try_append("s", {{"", "late"}}).status(), Code::kStreamFull,
              {{"stream", "s"}, {"max_bytes", "400"}, {"block_timeout_ms", "0"}});
  CHECK(f.bounds("s", 0).next == Offset(3));
}

ENGINE_TEST_CASE("an append waiting on a full stream goes through when a trim frees room") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", bounded(milliseconds(1000)));
  fill(f);
  std::promise<Result<AppendResult>> done;
  auto answer = done.get_future();
  f.broker->append("s", testing::inputs({{"", "waited"}}),
                   [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  f.scheduler.advance(milliseconds(999));
  CHECK(answer.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);

  auto first = f.broker->trim("s", PartitionId(0), Offset(3));
  REQUIRE(first.ok());
  auto r = answer.get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK(r->range.first == Offset(3));
  f.scheduler.advance(milliseconds(10));  // its timer was cancelled: no second answer
  CHECK(f.read("s", 0, 3) == std::vector<std::pair<uint64_t, std::string>>{{3, "waited"}});
}

ENGINE_TEST_CASE("an append still waiting at block_timeout fails STREAM_FULL with nothing written") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", bounded(milliseconds(1000)));
  fill(f);
  std::promise<Result<AppendResult>> done;
  auto answer = done.get_future();
  f.broker->append("s", testing::inputs({{"", "refused"}}),
                   [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  f.scheduler.advance(milliseconds(1000));
  check_error(answer.get().status(), Code::kStreamFull, {{"stream", "s"}, {"block_timeout_ms", "1000"}});
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});
  // Room made later does not resurrect it.
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(3)).ok());
  CHECK(f.bounds("s", 0).next == Offset(3));
}

ENGINE_TEST_CASE("retention making room admits a waiting append") {
  BrokerFixture f(TestType::kEngine);
  Policy policy = bounded(milliseconds(1000));
  policy.retain_for = std::chrono::minutes(1);
  f.create("s", policy);
  fill(f);
  f.clock.advance(std::chrono::minutes(2));
  std::promise<Result<AppendResult>> done;
  f.broker->append("s", testing::inputs({{"", "x"}}), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  REQUIRE(f.broker->apply_retention().ok());
  auto r = done.get_future().get();
  REQUIRE(r.ok());
  CHECK(r->range.first == Offset(3));
}

ENGINE_TEST_CASE("waiting appends are refused when their stream is deleted") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", bounded(milliseconds(1000)));
  fill(f);
  std::promise<Result<AppendResult>> done;
  f.broker->append("s", testing::inputs({{"", "x"}}), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  REQUIRE(f.broker->delete_stream("s").ok());
  check_error(done.get_future().get().status(), Code::kStreamNotFound, {{"stream", "s"}});
}

ENGINE_TEST_CASE("many producers appending at once all land, each batch whole and in one partition") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", partitions(2));
  constexpr int kProducers = 8, kBatches = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&f, &failures, p] {
      for (int i = 0; i < kBatches; ++i) {
        std::promise<Result<AppendResult>> done;
        const std::vector<Rec> records{{"", "p" + std::to_string(p)}, {"", "p" + std::to_string(p)}};
        f.broker->append("s", testing::inputs(records), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
        if (!done.get_future().get().ok()) ++failures;
      }
    });
  }
  for (auto& t : producers) t.join();
  CHECK(failures.load() == 0);
  const uint64_t total = f.bounds("s", 0).next.value + f.bounds("s", 1).next.value;
  CHECK(total == 2 * kProducers * kBatches);
  for (int32_t p = 0; p < 2; ++p) {
    auto entries = f.read("s", p);
    for (size_t i = 0; i + 1 < entries.size(); i += 2) CHECK(entries[i].second == entries[i + 1].second);
  }
}

}  // namespace
}  // namespace streamd
