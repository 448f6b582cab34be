// Read, Bounds, Peek, OffsetAt, Trim, Compact and the long-poll hook, through the broker.
#include <atomic>
#include <catch2/catch.hpp>
#include <future>

#include "server/storage/record_reader.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::BrokerFixture;
using testing::check_error;
using Entries = std::vector<std::pair<uint64_t, std::string>>;

Policy two_partitions() {
  Policy p;
  p.partitions = 2;
  return p;
}

ENGINE_TEST_CASE("read returns one answer per cursor, in cursor order, with per-cursor errors") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", two_partitions());
  f.append("s", {{"", "a"}});  // partition 0
  f.append("s", {{"", "b"}});  // partition 1
  f.append("s", {{"", "c"}});  // partition 0
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(1)).ok());

  auto r = f.broker->read("s",
                          {{PartitionId(1), Offset(0)},
                           {PartitionId(0), Offset(0)},
                           {PartitionId(0), Offset(5)},
                           {PartitionId(2), Offset(0)},
                           {PartitionId(0), Offset(2)}},
                          10, 0);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 5);
  CHECK((*r)[0].partition == PartitionId(1));
  REQUIRE((*r)[0].status.ok());
  REQUIRE((*r)[0].result.entries.size() == 1);
  CHECK((*r)[0].result.entries[0].payload == "b");
  check_error((*r)[1].status, Code::kOffsetTrimmed,
              {{"stream", "s"}, {"partition", "0"}, {"requested", "0"}, {"first", "1"}});
  check_error((*r)[2].status, Code::kOffsetAhead,
              {{"stream", "s"}, {"partition", "0"}, {"requested", "5"}, {"next", "2"}});
  check_error((*r)[3].status, Code::kUnknownPartition, {{"stream", "s"}, {"partition", "2"}, {"partitions", "2"}});
  // At next: nothing, and no error.
  CHECK((*r)[4].status.ok());
  CHECK((*r)[4].result.entries.empty());
  CHECK((*r)[4].result.next_from == Offset(2));
}

// The file engine's: the memory engine never waits for a disk (memory_engine_test.cc).
TEST_CASE("reads_tail: every cursor in its partition's active segment, or nothing to read") {
  BrokerFixture f;
  Policy p = two_partitions();
  p.segment_bytes = 256;  // a segment per batch or two
  f.create("s", p);
  for (int i = 0; i < 40; ++i) f.append("s", {{"", std::string(100, 'x')}});  // spread over both
  const Offset next0 = f.broker->bounds("s", PartitionId(0))->next;
  const Offset next1 = f.broker->bounds("s", PartitionId(1))->next;
  CHECK(f.broker->reads_tail("s", {{PartitionId(0), next0}, {PartitionId(1), next1}}));
  CHECK_FALSE(f.broker->reads_tail("s", {{PartitionId(0), Offset(0)}}));
  CHECK_FALSE(f.broker->reads_tail("s", {{PartitionId(1), next1}, {PartitionId(0), Offset(0)}}));
  // Nothing to wait for: an unknown stream or partition is refused at once by read().
  CHECK(f.broker->reads_tail("ghost", {{PartitionId(0), Offset(0)}}));
  CHECK(f.broker->reads_tail("s", {{PartitionId(7), Offset(0)}}));
}

ENGINE_TEST_CASE("a read asking for no records is INVALID_BATCH_SIZE") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  for (int32_t max : {0, -1}) {
    check_error(f.broker->read("s", {{PartitionId(0), Offset(0)}}, max, 0).status(), Code::kInvalidBatchSize,
                {{"stream", "s"}, {"max_records", std::to_string(max)}});
  }
}

ENGINE_TEST_CASE("read honours max_records and max_bytes, but always returns one record when one exists") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  f.append("s", {{"", "0123456789"}, {"", "0123456789"}, {"", "0123456789"}});
  auto two = f.broker->read("s", {{PartitionId(0), Offset(0)}}, 2, 0);
  REQUIRE(two.ok());
  CHECK((*two)[0].result.entries.size() == 2);
  CHECK((*two)[0].result.next_from == Offset(2));
  auto tiny = f.broker->read("s", {{PartitionId(0), Offset(0)}}, 10, 1);
  REQUIRE(tiny.ok());
  CHECK((*tiny)[0].result.entries.size() == 1);
}

ENGINE_TEST_CASE("a read in whole batches holds the records a read by record does, batches whole") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  std::vector<std::string> payloads;
  for (int batch = 0; batch < 4; ++batch) {
    std::vector<testing::Rec> records;
    for (int i = 0; i <= batch; ++i) records.push_back({"", "p" + std::to_string(payloads.size() + i)});
    for (const auto& r : records) payloads.push_back(r.payload);
    f.append("s", records);  // batches of 1, 2, 3 and 4 records: offsets 0, 1-2, 3-5, 6-9
  }
  for (uint64_t from = 0; from < payloads.size(); ++from) {
    auto r = f.broker->read("s", {{PartitionId(0), Offset(from)}}, 100, 0, Isolation::kReadCommitted,
                            ReadShape::kBatches);
    REQUIRE(r.ok());
    REQUIRE((*r)[0].status.ok());
    const ReadResult& read = (*r)[0].result;
    CHECK(read.next_from == Offset(payloads.size()));
    std::vector<std::string> got;
    for (const EntryView& e : read.entries) {
      if (e.whole_batch == 0) {
        got.emplace_back(e.payload);
        continue;
      }
      CHECK(e.offset >= Offset(from));  // whole only from the read's start on
      RecordReader records(e.batch);
      RecordView record;
      while (records.next(record)) got.emplace_back(record.payload);
      CHECK(got.size() == entry_end(e).value - from);
    }
    CHECK(got ==
          std::vector<std::string>(payloads.begin() + static_cast<std::ptrdiff_t>(from), payloads.end()));
    // A batch the read starts inside comes record by record; every later one whole.
    const bool starts_a_batch = from == 0 || from == 1 || from == 3 || from == 6;
    CHECK((read.entries.front().whole_batch > 0) == starts_a_batch);
    CHECK(read.entries.back().whole_batch == (from <= 6 ? 4u : 0u));
  }
  // Three records at most: the batch of four comes record by record.
  auto r = f.broker->read("s", {{PartitionId(0), Offset(6)}}, 3, 0, Isolation::kReadCommitted,
                          ReadShape::kBatches);
  REQUIRE(r.ok());
  REQUIRE((*r)[0].result.entries.size() == 3);
  CHECK((*r)[0].result.entries[0].whole_batch == 0);
  CHECK((*r)[0].result.next_from == Offset(9));
}

ENGINE_TEST_CASE("bounds, peek and offset_at of a partition") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  const Timestamp t0 = f.clock.now();
  CHECK(f.bounds("s", 0) == Bounds{});
  auto empty = f.broker->peek("s", PartitionId(0));
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->has_value());
  CHECK(f.broker->offset_at("s", PartitionId(0), t0).value() == Offset(0));

  f.append("s", {{"k", "a"}, {"k", "b"}});  // offsets 0-1 at t0
  f.clock.advance(seconds(10));
  f.append("s", {{"k", "c"}});  // offset 2 at t0+10s
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});

  auto last = f.broker->peek("s", PartitionId(0));
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  REQUIRE((*last)->entries.size() == 1);
  CHECK((*last)->entries[0].offset == Offset(2));
  CHECK((*last)->entries[0].payload == "c");

  struct Case {
    Timestamp t;
    uint64_t offset;
  };
  for (const Case& c : {Case{Timestamp(t0.micros - 1), 0}, Case{t0, 0}, Case{Timestamp(t0.micros + 1), 2},
                        Case{f.clock.now(), 2}, Case{Timestamp(f.clock.now().micros + 1), 3}}) {
    INFO("t=" << c.t.micros);
    CHECK(f.broker->offset_at("s", PartitionId(0), c.t).value() == Offset(c.offset));
  }
  check_error(f.broker->peek("s", PartitionId(1)).status(), Code::kUnknownPartition, {{"partitions", "1"}});
  check_error(f.broker->offset_at("s", PartitionId(-1), t0).status(), Code::kUnknownPartition, {{"partition", "-1"}});
  check_error(f.broker->bounds("s", PartitionId(1)).status(), Code::kUnknownPartition, {{"stream", "s"}});
}

ENGINE_TEST_CASE("trim raises first at once, at or below first it changes nothing, past next it is OFFSET_AHEAD") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  f.append("s", {{"", "a"}, {"", "b"}, {"", "c"}, {"", "d"}});
  CHECK(f.broker->trim("s", PartitionId(0), Offset(2)).value() == Offset(2));
  CHECK(f.bounds("s", 0) == Bounds{Offset(2), Offset(4)});
  CHECK(f.read("s", 0, 2) == Entries{{2, "c"}, {3, "d"}});
  // A time before every retained record now answers the first retained offset.
  CHECK(f.broker->offset_at("s", PartitionId(0), Timestamp(0)).value() == Offset(2));
  CHECK(f.broker->trim("s", PartitionId(0), Offset(1)).value() == Offset(2));
  CHECK(f.broker->trim("s", PartitionId(0), Offset(2)).value() == Offset(2));
  check_error(f.broker->trim("s", PartitionId(0), Offset(5)).status(), Code::kOffsetAhead,
              {{"stream", "s"}, {"partition", "0"}, {"requested", "5"}, {"next", "4"}});
  check_error(f.broker->trim("s", PartitionId(3), Offset(0)).status(), Code::kUnknownPartition, {{"partition", "3"}});
  // Offsets are never reused: next does not move, and trimming to next empties the partition.
  CHECK(f.broker->trim("s", PartitionId(0), Offset(4)).value() == Offset(4));
  CHECK(f.bounds("s", 0) == Bounds{Offset(4), Offset(4)});
  CHECK_FALSE(f.broker->peek("s", PartitionId(0)).value().has_value());
  CHECK(f.append("s", {{"", "e"}}).range.first == Offset(4));
}

TEST_CASE("a trim survives a reopen") {
  BrokerFixture f;
  f.create("s");
  f.append("s", {{"", "a"}, {"", "b"}, {"", "c"}});
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(2)).ok());
  f.reopen();
  CHECK(f.bounds("s", 0) == Bounds{Offset(2), Offset(3)});
  check_error(f.broker->read("s", {{PartitionId(0), Offset(1)}}, 1, 0).value()[0].status, Code::kOffsetTrimmed,
              {{"requested", "1"}, {"first", "2"}});
}

ENGINE_TEST_CASE("trim releases whole segments below the new first") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.segment_bytes = 100;
  f.create("s", policy);
  for (int i = 0; i < 4; ++i) f.append("s", {{"", std::string(80, 'x')}});
  REQUIRE(f.broker->describe_stream("s")->partitions[0].segments == 4);
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(2)).ok());
  CHECK(f.broker->describe_stream("s")->partitions[0].segments == 2);
}

ENGINE_TEST_CASE("compact through the broker: zero compact_after returns zeros, otherwise docs/SEMANTICS.md §6's rules") {
  BrokerFixture f(TestType::kEngine);
  Policy never;
  never.segment_bytes = 200;
  f.create("never", never);
  Policy policy = never;
  policy.compact_after = seconds(10);
  f.create("s", policy);
  for (const char* stream : {"never", "s"}) {
    f.append(stream, {{"k", "1"}});
    f.append(stream, {{"k", "2"}});
    f.append(stream, {{"", "u"}});
  }
  f.clock.advance(seconds(30));
  for (const char* stream : {"never", "s"}) f.append(stream, {{"filler", std::string(200, 'f')}});

  auto zero = f.broker->compact("never", PartitionId(0));
  REQUIRE(zero.ok());
  CHECK(zero->scanned == 0);
  CHECK(zero->kept == 0);
  CHECK(zero->dropped == 0);

  auto result = f.broker->compact("s", PartitionId(0));
  REQUIRE(result.ok());
  CHECK(result->scanned == 3);
  CHECK(result->kept == 2);
  CHECK(result->dropped == 1);
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(4)});
  CHECK(f.read("s", 0) == Entries{{1, "2"}, {2, "u"}, {3, std::string(200, 'f')}});
  check_error(f.broker->compact("s", PartitionId(1)).status(), Code::kUnknownPartition, {{"partitions", "1"}});
}

ENGINE_TEST_CASE("compaction reaches records that never left the active segment") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.compact_after = seconds(10);
  f.create("s", policy);
  f.append("s", {{"k", "1"}});
  f.append("s", {{"k", "2"}});
  auto early = f.broker->compact("s", PartitionId(0));
  REQUIRE(early.ok());
  CHECK(early->scanned == 0);  // nothing is old enough: the active segment stays as it is
  f.clock.advance(seconds(11));
  auto result = f.broker->compact("s", PartitionId(0));
  REQUIRE(result.ok());
  CHECK(result->scanned == 2);
  CHECK(result->dropped == 1);
  CHECK(f.read("s", 0) == Entries{{1, "2"}});
  f.append("s", {{"k", "3"}});
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});
}

ENGINE_TEST_CASE("watch wakes at once when a cursor already has something to read") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", two_partitions());
  f.append("s", {{"", "a"}});  // partition 0
  int wakes = 0;
  auto id = f.broker->watch("s", {{PartitionId(1), Offset(0)}, {PartitionId(0), Offset(0)}}, [&] { ++wakes; });
  REQUIRE(id.ok());
  CHECK(wakes == 1);
  // A cursor past next is ready too: the read has an OFFSET_AHEAD to report.
  REQUIRE(f.broker->watch("s", {{PartitionId(1), Offset(7)}}, [&] { ++wakes; }).ok());
  CHECK(wakes == 2);
}

ENGINE_TEST_CASE("watch wakes once when an append reaches a watched cursor, and not for other partitions") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", two_partitions());
  std::atomic<int> wakes{0};
  std::promise<void> woken;
  auto id = f.broker->watch("s", {{PartitionId(1), Offset(0)}}, [&] {
    if (++wakes == 1) woken.set_value();
  });
  REQUIRE(id.ok());
  CHECK(wakes == 0);
  f.append("s", {{"", "to 0"}});
  f.append("s", {{"", "to 1"}});
  REQUIRE(woken.get_future().wait_for(seconds(30)) == std::future_status::ready);
  f.append("s", {{"", "to 0"}});
  f.append("s", {{"", "to 1"}});
  f.broker->unwatch(*id);  // after the wake: harmless
  f.close();               // every commit listener has run once close returns
  CHECK(wakes == 1);
}

ENGINE_TEST_CASE("an unwatched watch never wakes") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  std::atomic<int> wakes{0};
  auto id = f.broker->watch("s", {{PartitionId(0), Offset(0)}}, [&] { ++wakes; });
  REQUIRE(id.ok());
  f.broker->unwatch(*id);
  f.append("s", {{"", "x"}});
  f.close();
  CHECK(wakes == 0);
}

ENGINE_TEST_CASE("watch refuses an unknown partition, and deleting the stream wakes its watchers") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  check_error(f.broker->watch("s", {{PartitionId(1), Offset(0)}}, [] {}).status(), Code::kUnknownPartition,
              {{"stream", "s"}, {"partition", "1"}});
  std::atomic<int> wakes{0};
  REQUIRE(f.broker->watch("s", {{PartitionId(0), Offset(0)}}, [&] { ++wakes; }).ok());
  REQUIRE(f.broker->delete_stream("s").ok());
  CHECK(wakes == 1);
}

}  // namespace
}  // namespace streamd
