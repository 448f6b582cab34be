// server/storage/batch_builder.h: what the builder writes reads back exactly — the native contract's
// records with their nulls, records with Kafka's nulls and create times, the batch-wide fields, holes
// compaction leaves, and record regions wrapped as they are.
#include "server/storage/batch_builder.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "tests/storage/batch_test_helpers.h"

namespace streamd {
namespace {

using namespace batch_format;
using namespace testing;


std::string seal(std::string bytes, Offset base = Offset(100)) {
  seal_batch(bytes, base, kTime);
  return bytes;
}

TEST_CASE("native records: an empty key is a null key, an empty payload under a key a null payload") {
  BatchBuilder b;
  b.add("user-1", "first payload");
  b.add("", "unkeyed", {{"trace", "abc"}, {"empty", ""}});
  b.add("user-1", "");  // a tombstone
  b.add("", "");        // no key, an empty payload: data
  b.add(std::string("\0\xff\x01", 3), std::string("\x00\x80\xfe\xff", 4),
        {{std::string("\0", 1), "\xc3\x28"}});
  b.add("k", std::string(300, 'x'));  // lengths past one varint byte
  const std::string bytes = seal(std::move(b).finish());
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.version == 2);
  CHECK(h.attributes == 0);
  CHECK(h.record_count == 6);
  CHECK(h.last_delta == 5);
  CHECK(h.base_timestamp == 0);
  CHECK(h.max_timestamp == 0);
  CHECK(h.producer == ProducerFields{});
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{
                         {100, "user-1", "first payload", {}, std::nullopt},
                         {101, std::nullopt, "unkeyed", {{"trace", "abc"}, {"empty", ""}}, std::nullopt},
                         {102, "user-1", std::nullopt, {}, std::nullopt},
                         {103, std::nullopt, "", {}, std::nullopt},
                         {104,
                          std::string("\0\xff\x01", 3),
                          std::string("\x00\x80\xfe\xff", 4),
                          {{std::string("\0", 1), "\xc3\x28"}},
                          std::nullopt},
                         {105, "k", std::string(300, 'x'), {}, std::nullopt},
                     });
  RecordReader reader(bytes);
  RecordView r;
  REQUIRE(reader.next(r));
  CHECK(r.keyed());
  CHECK_FALSE(r.tombstone());
  REQUIRE(reader.next(r));
  CHECK_FALSE(r.keyed());
  REQUIRE(reader.next(r));
  CHECK(r.tombstone());
}

TEST_CASE("records as given keep null against empty, header nulls and create times") {
  BatchBuilder b(batch_options(true));
  auto add = [&](std::optional<std::string_view> key, std::optional<std::string_view> value,
                 std::vector<HeaderView> headers, int64_t ts) {
    RecordView r;
    r.key_null = !key;
    r.key = key.value_or("");
    r.payload_null = !value;
    r.payload = value.value_or("");
    r.headers = std::move(headers);
    r.create_time = CreateTime(ts);
    b.add(r);
  };
  add("k", std::nullopt, {}, 1'700'000'000'000);                      // a tombstone
  add("k", "", {}, 1'700'000'000'500);                                // an empty value: data
  add("", "v", {}, 1'600'000'000'000);                                // an empty key, earlier
  add(std::nullopt, std::nullopt, {{"h", "", true}, {"e", ""}}, -1);  // null header value, empty one
  add(std::nullopt, "v", {}, std::numeric_limits<int64_t>::max());    // the far ends of time
  add(std::nullopt, "v", {}, std::numeric_limits<int64_t>::min());
  const std::string bytes = seal(std::move(b).finish(), Offset(0));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.create_times());
  CHECK(h.base_timestamp == 1'700'000'000'000);
  CHECK(h.max_timestamp == std::numeric_limits<int64_t>::max());
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{
                         {0, "k", std::nullopt, {}, 1'700'000'000'000},
                         {1, "k", "", {}, 1'700'000'000'500},
                         {2, "", "v", {}, 1'600'000'000'000},
                         {3, std::nullopt, std::nullopt, {{"h", std::nullopt}, {"e", ""}}, -1},
                         {4, std::nullopt, "v", {}, std::numeric_limits<int64_t>::max()},
                         {5, std::nullopt, "v", {}, std::numeric_limits<int64_t>::min()},
                     });
  // An empty key is not a key (docs/SEMANTICS.md §1), null or not; only a null payload is a tombstone.
  RecordReader reader(bytes);
  RecordView r;
  std::vector<bool> tombstones;
  while (reader.next(r)) tombstones.push_back(r.tombstone());
  CHECK(tombstones == std::vector<bool>{true, false, false, false, false, false});
}

TEST_CASE("a record without a create time in a batch with them takes the base timestamp") {
  BatchBuilder b(batch_options(true));
  RecordView r;
  r.payload = "a";
  r.create_time = CreateTime(50);
  b.add(r);
  r.create_time.reset();
  b.add(r);
  Walk w = walk(seal(std::move(b).finish()));
  CHECK_FALSE(w.error);
  REQUIRE(w.records.size() == 2);
  CHECK(w.records[1].create_time == 50);
}

TEST_CASE("create times are dropped from a batch whose options have none") {
  BatchBuilder b;
  RecordView r;
  r.payload = "a";
  r.create_time = CreateTime(50);
  b.add(r);
  const std::string bytes = seal(std::move(b).finish());
  CHECK_FALSE(peek_header(bytes).create_times());
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records[0].create_time == std::nullopt);
}

TEST_CASE("the batch-wide fields are written as given") {
  BatchBuilder b(batch_options(false, {12, 3, 100}, true));
  b.add("k", "v");
  BatchHeader h;
  const std::string bytes = seal(std::move(b).finish());
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.transactional());
  CHECK_FALSE(h.control());
  CHECK(h.producer == ProducerFields{12, 3, 100});
}

TEST_CASE("producer fields without a producer id are written as none") {
  BatchBuilder b(batch_options(false, {-1, 0, 0}));  // what some Kafka clients send unset
  b.add("k", "v");
  const std::string batch = seal(std::move(b).finish());
  BatchHeader h;
  REQUIRE(check_batch(batch, h) == BatchCheck::kOk);
  CHECK(h.producer == ProducerFields{});
}

TEST_CASE("builder size and count track the records added") {
  BatchBuilder b;
  CHECK(b.empty());
  CHECK(b.size() == kV2HeaderSize);
  b.add("key", "payload");
  CHECK(b.count() == 1);
  // length, attributes, timestamp delta, offset delta, key length and key, value length and value, headers
  CHECK(b.size() == kV2HeaderSize + 1 + 1 + 1 + 1 + 1 + 3 + 1 + 7 + 1);
  b.add(Record{"", "p", {{"h", "v"}}});
  CHECK(b.count() == 2);
  const size_t size = b.size();
  const std::string batch = std::move(b).finish();
  CHECK(batch.size() == size);
}

TEST_CASE("add_at and set_last_delta keep offsets across holes") {
  BatchBuilder b;
  RecordView r;
  r.key = "a";
  r.payload = "1";
  b.add_at(0, r);
  r.key = "b";
  b.add_at(3, r);
  r.key = "c";
  b.add_at(7, r);
  b.set_last_delta(9);  // the records at deltas 8 and 9 were dropped
  const std::string bytes = seal(std::move(b).finish(), Offset(50));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.record_count == 3);
  CHECK(h.last_delta == 9);
  CHECK(h.last_offset() == Offset(59));
  CHECK(h.end_offset() == Offset(60));
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  REQUIRE(w.records.size() == 3);
  CHECK(w.records[0].offset == 50);
  CHECK(w.records[1].offset == 53);
  CHECK(w.records[2].offset == 57);
  CHECK(w.records[2].key == "c");
}

TEST_CASE("add_at alone makes the last delta the highest one added") {
  BatchBuilder b;
  RecordView r;
  b.add_at(2, r);
  b.add_at(5, r);
  const std::string batch = seal(std::move(b).finish(), Offset(0));
  BatchHeader h;
  REQUIRE(check_batch(batch, h) == BatchCheck::kOk);
  CHECK(h.last_delta == 5);
}

TEST_CASE("a batch emptied by compaction still covers its offsets, without create times") {
  BatchBuilder b(batch_options(true, {4, 0, 0}));
  b.set_last_delta(4);
  const std::string bytes = seal(std::move(b).finish(), Offset(10));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.record_count == 0);
  CHECK(h.end_offset() == Offset(15));
  CHECK_FALSE(h.create_times());
  CHECK(h.producer == ProducerFields{4, 0, 0});
  Walk w = walk(bytes);
  CHECK(w.records.empty());
  CHECK_FALSE(w.error);
}

TEST_CASE("wrap puts a header around records already encoded, which read back as they were") {
  BatchBuilder b(batch_options(true));
  RecordView r;
  r.key = "k";
  r.payload = "v";
  r.create_time = CreateTime(1000);
  b.add(r);
  r.payload_null = true;
  r.payload = "";
  r.create_time = CreateTime(990);
  b.add(r);
  const std::string built = std::move(b).finish();
  const std::string_view region = std::string_view(built).substr(kV2HeaderSize);
  const std::string wrapped =
      BatchBuilder::wrap(batch_options(true, {9, 0, 5}), EncodedRecords{region, 2, 1, 1000, 1000});
  CHECK(std::string_view(wrapped).substr(kV2HeaderSize) == region);
  const std::string bytes = seal(wrapped, Offset(0));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.producer == ProducerFields{9, 0, 5});
  CHECK(check_records(bytes));
  Walk w = walk(bytes);
  CHECK(w.records == std::vector<Decoded>{{0, "k", "v", {}, 1000}, {1, "k", std::nullopt, {}, 990}});
}

}  // namespace
}  // namespace streamd
