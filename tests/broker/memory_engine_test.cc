// What only the memory engine has (docs/ENGINES.md): its capacity, storage.memory.max_bytes, enforced by
// the broker's backpressure for every stream together, never by eviction; and nothing kept across an
// open. Everything else it shares with the file engine is in the conformance suite (ENGINE_TEST_CASE).
#include <catch2/catch.hpp>
#include <future>
#include <string>

#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::TestEngine;

constexpr size_t kRecordPayload = 100;

// A memory engine of `capacity` bytes with streams "a" and "b" (policies `a`, `b`).
struct CapacityFixture : BrokerFixture {
  explicit CapacityFixture(uint64_t capacity, Policy a = {}, Policy b = {}) : BrokerFixture(TestEngine::kMemory) {
    memory_max_bytes = capacity;
    reopen();
    create("a", a);
    create("b", b);
  }
  uint64_t held() {
    uint64_t total = 0;
    for (const char* s : {"a", "b"}) total += broker->describe_stream(s)->partitions[0].bytes;
    return total;
  }
  void fill(const std::string& stream) {
    while (held() < memory_max_bytes) append(stream, {{"", std::string(kRecordPayload, 'x')}});
  }
};

TEST_CASE("a full memory engine refuses an append to any stream STREAM_FULL, naming its limit, nothing written") {
  CapacityFixture f(1000);
  f.fill("a");
  const uint64_t held = f.held();
  check_error(f.try_append("b", {{"", "late"}}).status(), Code::kStreamFull,
              {{"stream", "b"},
               {"limit", "storage.memory.max_bytes"},
               {"max_bytes", "1000"},
               {"bytes", std::to_string(held)},
               {"block_timeout_ms", "0"}});
  CHECK(f.bounds("b", 0).next == Offset(0));
  CHECK(f.held() == held);
  // Nothing was evicted to make room.
  CHECK(f.bounds("a", 0).first == Offset(0));
  CHECK(f.read("a", 0).size() == f.bounds("a", 0).next.value);
}

TEST_CASE("room freed in one stream of the memory engine admits the append waiting on another") {
  Policy waits;
  waits.max_bytes = 1 << 20;  // the stream's own limit is far away: only the engine is full
  waits.block_timeout = milliseconds(1000);
  Policy small_segments;
  small_segments.segment_bytes = 1;  // one batch per segment, so a trim releases each
  CapacityFixture f(1000, small_segments, waits);
  f.fill("a");
  std::promise<Result<AppendResult>> done;
  auto answer = done.get_future();
  f.broker->append("b", testing::inputs({{"", "waited"}}), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  f.scheduler.advance(milliseconds(999));
  CHECK(answer.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);

  REQUIRE(f.broker->trim("a", PartitionId(0), f.bounds("a", 0).next).ok());
  auto r = answer.get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK(f.read("b", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "waited"}});
}

TEST_CASE("deleting a stream of the memory engine frees its room, waiting past block_timeout is STREAM_FULL") {
  Policy waits;
  waits.max_bytes = 1 << 20;
  waits.block_timeout = milliseconds(500);
  CapacityFixture f(1000, {}, waits);
  f.fill("a");

  std::promise<Result<AppendResult>> refused;
  f.broker->append("b", testing::inputs({{"", "refused"}}),
                   [&](Result<AppendResult> r) { refused.set_value(std::move(r)); });
  f.scheduler.advance(milliseconds(500));
  check_error(refused.get_future().get().status(), Code::kStreamFull,
              {{"stream", "b"}, {"limit", "storage.memory.max_bytes"}, {"block_timeout_ms", "500"}});

  std::promise<Result<AppendResult>> admitted;
  f.broker->append("b", testing::inputs({{"", "admitted"}}),
                   [&](Result<AppendResult> r) { admitted.set_value(std::move(r)); });
  REQUIRE(f.broker->delete_stream("a").ok());
  auto r = admitted.get_future().get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK(f.read("b", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "admitted"}});
}

TEST_CASE("a stream's own max_bytes still applies inside the memory engine, with its own figures") {
  Policy bounded;
  bounded.max_record_bytes = 200;
  bounded.max_bytes = 300;
  CapacityFixture f(1 << 20, bounded);
  while (f.held() < 300) f.append("a", {{"", std::string(kRecordPayload, 'x')}});
  auto refused = f.try_append("a", {{"", "late"}});
  check_error(refused.status(), Code::kStreamFull, {{"stream", "a"}, {"max_bytes", "300"}});
  CHECK(refused.status().field("limit").empty());
  f.append("b", {{"", "other streams go on"}});
}

TEST_CASE("a read of the memory engine never waits for a disk: reads_tail holds from any offset") {
  BrokerFixture f(TestEngine::kMemory);
  Policy p;
  p.segment_bytes = 256;
  f.create("s", p);
  for (int i = 0; i < 20; ++i) f.append("s", {{"", std::string(100, 'x')}});
  REQUIRE(f.broker->describe_stream("s")->partitions[0].segments > 1);
  CHECK(f.broker->reads_tail("s", {{PartitionId(0), Offset(0)}}));
  CHECK(f.broker->reads_tail("s", {{PartitionId(0), Offset(20)}}));
}

TEST_CASE("the memory engine keeps nothing across an open") {
  BrokerFixture f(TestEngine::kMemory);
  f.create("s");
  f.append("s", {{"k", "v"}});
  REQUIRE(f.commit("s", "g", 0, 1).ok());
  f.reopen();
  CHECK(f.broker->list_streams().empty());
  check_error(f.broker->describe_stream("s").status(), Code::kStreamNotFound, {{"stream", "s"}});
}

}  // namespace
}  // namespace streamd
