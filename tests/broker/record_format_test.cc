// What the batch format carries, through the broker on every engine: create times, nulls and producer
// fields read back exactly (after a reopen too, where the engine keeps anything), compaction tells a null
// payload (a tombstone) from an empty one, lookups by create time and by append time, and batches that
// version 1's encoder wrote read as they always did.
#include <catch2/catch.hpp>
#include <future>
#include <optional>

#include "server/storage/batch_builder.h"
#include "tests/broker/broker_fixture.h"
#include "tests/support/v1_batch.h"

namespace streamd {
namespace {

using std::chrono::seconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::TestEngine;

// A record as a Kafka producer may send it; nullopt is null.
struct KRec {
  std::optional<std::string> key;
  std::optional<std::string> value;
  int64_t time = 0;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers = {};
};

// Appends `records` as one batch with create times, the way the Kafka listener does.
AppendResult append_kafka(BrokerFixture& f, const std::string& stream, int32_t partition,
                          const std::vector<KRec>& records, ProducerFields producer = {}) {
  BatchOptions options;
  options.create_times = true;
  options.producer = producer;
  BatchBuilder b(options);
  std::vector<RecordInput> checks;
  for (const KRec& r : records) {
    RecordView v;
    v.key_null = !r.key;
    v.key = r.key ? std::string_view(*r.key) : std::string_view();
    v.payload_null = !r.value;
    v.payload = r.value ? std::string_view(*r.value) : std::string_view();
    for (const auto& [name, value] : r.headers) {
      v.headers.push_back({name, value ? std::string_view(*value) : std::string_view(), !value});
    }
    v.create_time = CreateTime(r.time);
    b.add(v);
    checks.push_back({v.key, v.payload, v.headers});
  }
  std::promise<Result<AppendResult>> done;
  f.broker->append_batch_to_partition(stream, PartitionId(partition), false, checks, std::move(b).finish(),
                                      [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  auto r = done.get_future().get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  return *r;
}

// An unsealed batch of version 1, as the broker wrote them before version 2, appended as it is.
AppendResult append_v1(BrokerFixture& f, const std::string& stream, const std::vector<Record>& records) {
  std::vector<RecordInput> checks;
  for (const Record& r : records) checks.push_back({r.key, r.payload, {}});
  std::promise<Result<AppendResult>> done;
  f.broker->append_batch_to_partition(stream, PartitionId(0), false, checks,
                                      streamd::testing::v1_batch(records),
                                      [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  auto r = done.get_future().get();
  REQUIRE(r.ok());
  return *r;
}

struct Seen {
  uint64_t offset;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::optional<int64_t> time;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> read_exact(BrokerFixture& f, const std::string& stream) {
  auto r = f.broker->read(stream, {{PartitionId(0), Offset(0)}}, 1000, 0);
  REQUIRE(r.ok());
  REQUIRE((*r)[0].status.ok());
  std::vector<Seen> out;
  for (const EntryView& e : (*r)[0].result.entries) {
    Seen s{e.offset.value, std::nullopt, std::nullopt, std::nullopt, {}};
    if (!e.key_null) s.key = std::string(e.key);
    if (!e.payload_null) s.value = std::string(e.payload);
    if (e.create_time) s.time = e.create_time->millis;
    for (const HeaderView& h : e.headers) {
      s.headers.emplace_back(std::string(h.name),
                             h.value_null ? std::nullopt : std::optional<std::string>(h.value));
    }
    out.push_back(std::move(s));
  }
  return out;
}

ENGINE_TEST_CASE("create times, nulls and header nulls read back exactly, native records as their nulls") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  append_kafka(f, "s", 0,
               {{"k", std::nullopt, 1000},
                {"k", "", 1010, {{"h", std::nullopt}, {"e", ""}}},
                {std::nullopt, "v", 990},
                {"", std::nullopt, 1005}},
               ProducerFields{4, 1, 0});
  f.append("s", {{"k", ""}, {"", "unkeyed"}});
  const std::vector<Seen> expected = {
      {0, "k", std::nullopt, 1000, {}},
      {1, "k", "", 1010, {{"h", std::nullopt}, {"e", ""}}},
      {2, std::nullopt, "v", 990, {}},
      {3, "", std::nullopt, 1005, {}},
      {4, "k", std::nullopt, std::nullopt, {}},        // a native tombstone: its payload is null
      {5, std::nullopt, "unkeyed", std::nullopt, {}},  // a native empty key: no key
  };
  CHECK(read_exact(f, "s") == expected);
  if (f.engine != TestEngine::kMemory) {
    f.reopen();
    CHECK(read_exact(f, "s") == expected);
  }
}

ENGINE_TEST_CASE("compaction drops a null payload as a tombstone and keeps an empty one as data") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.compact_after = seconds(10);
  f.create("s", policy);
  f.append("s", {{"native", "v"}});
  f.append("s", {{"native", ""}});                                         // a native tombstone
  append_kafka(f, "s", 0, {{"empty", "v", 1}, {"empty", "", 2}});          // a Kafka empty value: data
  append_kafka(f, "s", 0, {{"null", "v", 3}, {"null", std::nullopt, 4}});  // a Kafka null value: a tombstone
  f.clock.advance(seconds(11));
  auto first = f.broker->compact("s", PartitionId(0));
  REQUIRE(first.ok());
  CHECK(first->dropped == 3);  // each key's older record; the tombstones stay one more compact_after
  std::vector<uint64_t> offsets;
  for (const Seen& s : read_exact(f, "s")) offsets.push_back(s.offset);
  CHECK(offsets == std::vector<uint64_t>{1, 3, 5});
  f.clock.advance(seconds(10));
  auto second = f.broker->compact("s", PartitionId(0));
  REQUIRE(second.ok());
  CHECK(second->dropped == 2);  // both tombstones; the empty value is data and stays
  const std::vector<Seen> left = read_exact(f, "s");
  REQUIRE(left.size() == 1);
  CHECK(left[0] == Seen{3, "empty", "", 2, {}});
}

ENGINE_TEST_CASE("a batch compaction rewrites keeps its version, create times and producer fields") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.compact_after = seconds(10);
  f.create("s", policy);
  const ProducerFields producer{7, 2, 40};
  append_kafka(f, "s", 0, {{"a", "old", 100}, {"b", "kept", 200}, {"a", "new", 300}}, producer);
  f.clock.advance(seconds(11));
  auto compacted = f.broker->compact("s", PartitionId(0));
  REQUIRE(compacted.ok());
  CHECK(compacted->dropped == 1);
  auto r = f.broker->read("s", {{PartitionId(0), Offset(0)}}, 1000, 0);
  REQUIRE(r.ok());
  REQUIRE((*r)[0].status.ok());
  const auto& entries = (*r)[0].result.entries;
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].offset == Offset(1));
  CHECK(entries[1].offset == Offset(2));
  const BatchHeader h = peek_header(entries[0].batch);
  CHECK(h.version == batch_format::kVersion2);
  CHECK(h.create_times());
  CHECK(h.producer == producer);
  CHECK(h.base_offset == Offset(0));
  CHECK(h.last_delta == 2);
  CHECK(read_exact(f, "s") == std::vector<Seen>{{1, "b", "kept", 200, {}}, {2, "a", "new", 300, {}}});
}

ENGINE_TEST_CASE("lookups by create time answer the first record at or after it, nullopt past them all") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.segment_bytes = 150;  // a segment per batch: the lookup crosses closed segments
  f.create("s", policy);
  append_kafka(f, "s", 0, {{"a", "0", 1000}, {"b", "1", 3000}, {"c", "2", 2000}});
  f.clock.advance(seconds(1));
  f.append("s", {{"native", "3"}});  // no create time: its appended_at counts
  const int64_t native_ms = f.clock.now().micros / 1000;
  append_kafka(f, "s", 0, {{"d", "4", native_ms + 5000}});
  auto at = [&](int64_t ms) {
    auto r = f.broker->offset_for_time("s", PartitionId(0), ms);
    REQUIRE(r.ok());
    return *r;
  };
  // Twice each: the second lookup may skip the closed segments the first walked whole.
  for (int round = 0; round < 2; ++round) {
    CHECK(at(0) == TimedOffset{Offset(0), 1000});
    CHECK(at(1500) == TimedOffset{Offset(1), 3000});
    CHECK(at(3001) == TimedOffset{Offset(3), native_ms});
    CHECK(at(native_ms + 1) == TimedOffset{Offset(4), native_ms + 5000});
    CHECK(at(native_ms + 5001) == std::nullopt);
  }
  // Records below the first offset are not retained: they are not answered.
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(2)).ok());
  CHECK(at(0) == TimedOffset{Offset(2), 2000});
  CHECK(at(2500) == TimedOffset{Offset(3), native_ms});
  check_error(f.broker->offset_for_time("s", PartitionId(3), 0).status(), Code::kUnknownPartition, {});
}

ENGINE_TEST_CASE("a LogAppendTime stream looks times up by appended_at, answering it in milliseconds") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.timestamp_type = TimestampType::kLogAppendTime;
  f.create("s", policy);
  const int64_t first_ms = f.clock.now().micros / 1000;
  append_kafka(f, "s", 0, {{"a", "0", 1}, {"b", "1", 999'999'999'999'999}});
  f.clock.advance(seconds(2));
  const int64_t second_ms = f.clock.now().micros / 1000;
  f.append("s", {{"c", "2"}});
  auto at = [&](int64_t ms) {
    auto r = f.broker->offset_for_time("s", PartitionId(0), ms);
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(at(0) == TimedOffset{Offset(0), first_ms});
  CHECK(at(first_ms) == TimedOffset{Offset(0), first_ms});
  CHECK(at(first_ms + 1) == TimedOffset{Offset(2), second_ms});
  CHECK(at(second_ms + 1) == std::nullopt);
  CHECK(f.broker->policy("s")->timestamp_type == TimestampType::kLogAppendTime);
}

ENGINE_TEST_CASE("batches version 1's encoder wrote read as they always did, beside version 2 ones") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.compact_after = seconds(10);
  f.create("s", policy);
  append_v1(f, "s", {{"k", "old", {{"h", "x"}}}, {"", "unkeyed", {}}, {"k", "", {}}});
  f.append("s", {{"k", "new"}});
  const std::vector<Seen> expected = {
      {0, "k", "old", std::nullopt, {{"h", "x"}}},
      {1, std::nullopt, "unkeyed", std::nullopt, {}},  // version 1's empty key: no key
      {2, "k", std::nullopt, std::nullopt, {}},        // version 1's empty payload under a key: a tombstone
      {3, "k", "new", std::nullopt, {}},
  };
  CHECK(read_exact(f, "s") == expected);
  if (f.engine != TestEngine::kMemory) {
    f.reopen();
    CHECK(read_exact(f, "s") == expected);
  }
  // Compaction rewrites the version 1 batch as version 2 with the same meanings.
  f.clock.advance(seconds(11));
  auto compacted = f.broker->compact("s", PartitionId(0));
  REQUIRE(compacted.ok());
  CHECK(compacted->dropped == 2);
  const std::vector<Seen> left = read_exact(f, "s");
  REQUIRE(left.size() == 2);
  CHECK(left[0] == expected[1]);
  CHECK(left[1] == expected[3]);
}

}  // namespace
}  // namespace streamd
