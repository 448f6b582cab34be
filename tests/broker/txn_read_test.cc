// Reading transactions through the broker (server/broker/partition_ops.cc, server/storage/isolation.cc),
// on the engines that take transactional batches: markers are never records, read_committed stops at
// the last stable offset and skips aborted records, read_uncommitted reads them to the end; long polls
// wait for the marker; trim, retention and compaction leave an open transaction's records alone.
#include <atomic>
#include <catch2/catch.hpp>

#include "server/storage/batch_builder.h"
#include "server/storage/record_reader.h"
#include "server/storage/txn_marker.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::BrokerFixture;

std::string txn_batch(int64_t id, int32_t seq, const std::vector<std::string>& payloads,
                      const std::string& key = "") {
  BatchBuilder b(BatchOptions{false, true, false, {id, 0, seq}});
  for (const std::string& p : payloads) b.add(key, p);
  return std::move(b).finish();
}

std::string plain_batch(const std::vector<std::string>& payloads, const std::string& key = "") {
  BatchBuilder b;
  for (const std::string& p : payloads) b.add(key, p);
  return std::move(b).finish();
}

// The records a batch carries, as append_batch_to_partition checks them.
std::vector<RecordInput> records_of(const std::string& batch) {
  std::vector<RecordInput> out;
  RecordReader reader(batch);
  RecordView r;
  while (reader.next(r)) out.push_back({std::string(r.key), std::string(r.payload), {}});
  return out;
}

Result<AppendResult> put(BrokerFixture& f, std::string batch) {
  std::promise<Result<AppendResult>> done;
  const std::vector<RecordInput> records = records_of(batch);
  f.broker->append_batch_to_partition("s", PartitionId(0), false, records, std::move(batch),
                                      [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

std::vector<std::pair<uint64_t, std::string>> read_at(BrokerFixture& f, Isolation isolation, uint64_t from,
                                                      uint64_t* next_from = nullptr) {
  auto r = f.broker->read("s", {{PartitionId(0), Offset(from)}}, 1000, 0, isolation);
  REQUIRE(r.ok());
  REQUIRE((*r)[0].status.ok());
  if (next_from != nullptr) *next_from = (*r)[0].result.next_from.value;
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const auto& e : (*r)[0].result.entries) out.emplace_back(e.offset.value, std::string(e.payload));
  return out;
}

using Records = std::vector<std::pair<uint64_t, std::string>>;

TEMPLATE_TEST_CASE("transactions: read_committed stops at the open transaction, and never sees markers",
                   "[txn]", OnFiles, InMemory, OnPostgres, OnTwoShards) {
  BrokerFixture f(TestType::kEngine);
  f.create("s", Policy{.partitions = 1});
  REQUIRE(put(f, plain_batch({"a"})).ok());             // 0
  REQUIRE(put(f, txn_batch(7, 0, {"t1", "t2"})).ok());  // 1, 2
  REQUIRE(put(f, plain_batch({"b"})).ok());             // 3
  uint64_t next = 0;
  CHECK(read_at(f, Isolation::kReadCommitted, 0, &next) == Records{{0, "a"}});
  CHECK(next == 1);
  CHECK(read_at(f, Isolation::kReadCommitted, 1, &next).empty());
  CHECK(next == 1);
  CHECK(read_at(f, Isolation::kReadUncommitted, 0) == Records{{0, "a"}, {1, "t1"}, {2, "t2"}, {3, "b"}});
  auto ends = f.broker->ends("s", PartitionId(0));
  REQUIRE(ends.ok());
  CHECK(ends->last_stable == Offset(1));
  CHECK(ends->bounds.next == Offset(4));

  REQUIRE(put(f, build_txn_marker(7, 0, MarkerType::kCommit, 0)).ok());  // 4
  REQUIRE(put(f, plain_batch({"c"})).ok());                              // 5
  const Records all{{0, "a"}, {1, "t1"}, {2, "t2"}, {3, "b"}, {5, "c"}};
  CHECK(read_at(f, Isolation::kReadCommitted, 0) == all);
  CHECK(read_at(f, Isolation::kReadUncommitted, 0) == all);
  // A read from the marker itself steps over it.
  CHECK(read_at(f, Isolation::kReadCommitted, 4, &next) == Records{{5, "c"}});
  CHECK(f.broker->ends("s", PartitionId(0))->last_stable == Offset(6));
}

TEMPLATE_TEST_CASE("transactions: aborted records are skipped at read_committed and read at read_uncommitted",
                   "[txn]", OnFiles, InMemory, OnPostgres, OnTwoShards) {
  BrokerFixture f(TestType::kEngine);
  f.create("s", Policy{.partitions = 1});
  REQUIRE(put(f, txn_batch(7, 0, {"x1", "x2"})).ok());                   // 0, 1
  REQUIRE(put(f, txn_batch(8, 0, {"y1"})).ok());                         // 2
  REQUIRE(put(f, txn_batch(7, 2, {"x3"})).ok());                         // 3
  REQUIRE(put(f, build_txn_marker(7, 0, MarkerType::kAbort, 0)).ok());   // 4
  REQUIRE(put(f, build_txn_marker(8, 0, MarkerType::kCommit, 0)).ok());  // 5
  uint64_t next = 0;
  CHECK(read_at(f, Isolation::kReadCommitted, 0, &next) == Records{{2, "y1"}});
  CHECK(next == 6);
  CHECK(read_at(f, Isolation::kReadCommitted, 3, &next).empty());  // only aborted records and markers
  CHECK(next == 6);
  CHECK(read_at(f, Isolation::kReadUncommitted, 0) == Records{{0, "x1"}, {1, "x2"}, {2, "y1"}, {3, "x3"}});
  // The producer's next transaction is not the aborted one.
  REQUIRE(put(f, txn_batch(7, 3, {"x4"})).ok());  // 6
  REQUIRE(put(f, build_txn_marker(7, 0, MarkerType::kCommit, 0)).ok());
  CHECK(read_at(f, Isolation::kReadCommitted, 0) == Records{{2, "y1"}, {6, "x4"}});
  // And across a restart (the memory engine keeps nothing), on files.
  if (TestType::kEngine == testing::TestEngine::kFile) {
    f.reopen();
    CHECK(read_at(f, Isolation::kReadCommitted, 0) == Records{{2, "y1"}, {6, "x4"}});
  }
}

TEMPLATE_TEST_CASE("transactions: a read_committed long poll wakes when the marker lands, not before",
                   "[txn]", OnFiles, InMemory, OnPostgres, OnTwoShards) {
  BrokerFixture f(TestType::kEngine);
  f.create("s", Policy{.partitions = 1});
  REQUIRE(put(f, txn_batch(7, 0, {"t"})).ok());  // 0
  std::atomic<int> committed_wakes{0};
  std::atomic<int> uncommitted_wakes{0};
  auto w1 = f.broker->watch(
      "s", {{PartitionId(0), Offset(0)}}, [&] { ++committed_wakes; }, Isolation::kReadCommitted);
  auto w2 = f.broker->watch(
      "s", {{PartitionId(0), Offset(0)}}, [&] { ++uncommitted_wakes; }, Isolation::kReadUncommitted);
  REQUIRE(w1.ok());
  REQUIRE(w2.ok());
  CHECK(uncommitted_wakes == 1);  // the record is there already
  CHECK(committed_wakes == 0);
  REQUIRE(put(f, build_txn_marker(7, 0, MarkerType::kCommit, 0)).ok());
  CHECK(testing::eventually([&] { return committed_wakes == 1; }));
  f.broker->unwatch(*w1);
  f.broker->unwatch(*w2);
}

TEMPLATE_TEST_CASE("transactions: trim, retention and compaction leave an open transaction's records alone",
                   "[txn]", OnFiles, InMemory, OnPostgres, OnTwoShards) {
  BrokerFixture f(TestType::kEngine);
  Policy policy{.partitions = 1};
  policy.segment_bytes = 1024;
  policy.retain_bytes = 1;
  policy.compact_after = std::chrono::milliseconds(1);
  f.create("s", policy);
  REQUIRE(put(f, plain_batch({"old"}, "k")).ok());       // 0
  REQUIRE(put(f, txn_batch(7, 0, {"open"}, "k")).ok());  // 1
  for (int i = 0; i < 40; ++i) REQUIRE(put(f, plain_batch({std::string(100, 'p')}, "k")).ok());
  const Offset end = f.bounds("s", 0).next;

  auto trimmed = f.broker->trim("s", PartitionId(0), Offset(2));
  REQUIRE_FALSE(trimmed.ok());
  CHECK(trimmed.status().code() == Code::kInvalidTxnState);
  CHECK(trimmed.status().fields().at("last_stable") == "1");
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(1)).ok());  // up to it is fine

  f.clock.advance(std::chrono::seconds(10));
  REQUIRE(f.broker->apply_retention().ok());
  auto compacted = f.broker->compact("s", PartitionId(0));
  REQUIRE(compacted.ok());
  CHECK(compacted->dropped == 0);  // every "k" after offset 1 waits for the transaction
  CHECK(f.bounds("s", 0).first == Offset(1));
  CHECK(read_at(f, Isolation::kReadUncommitted, 1).size() == 41);

  REQUIRE(put(f, build_txn_marker(7, 0, MarkerType::kAbort, 0)).ok());
  f.clock.advance(std::chrono::seconds(10));
  compacted = f.broker->compact("s", PartitionId(0));
  REQUIRE(compacted.ok());
  CHECK(compacted->dropped > 0);
  // The aborted record was no key's last value; the last committed one survives.
  const Records left = read_at(f, Isolation::kReadCommitted, f.bounds("s", 0).first.value);
  REQUIRE_FALSE(left.empty());
  CHECK(left.back().first == end.value - 1);
}

}  // namespace
}  // namespace streamd
