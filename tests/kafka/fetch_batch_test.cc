// server/kafka/fetch_batch.h: stored batches as a Fetch answers them — version 2 record regions sent as
// they are, timestamps by the topic's type, version 1 batches and moved starts encoded anew, holes
// skipped — each checked by decoding the answer with the broker's own Produce decoder.
#include "server/kafka/fetch_batch.h"

#include <catch2/catch.hpp>
#include <deque>
#include <string>
#include <vector>

#include "server/kafka/codec.h"
#include "server/kafka/record_batch.h"
#include "server/storage/batch_builder.h"
#include "server/storage/crc32c.h"
#include "server/storage/record_reader.h"
#include "tests/kafka/batch_helpers.h"
#include "tests/support/v1_batch.h"

namespace streamd::kafka {
namespace {

using testing::exact_producer_batch;
using testing::exact_record_region;
using testing::ExactRecord;

constexpr Timestamp kAppended(1'800'000'000'123'456);

// A stored batch as a Kafka producer's records become one, sealed at `base`.
std::string stored_from_producer(const std::vector<ExactRecord>& records, int64_t base_timestamp,
                                 uint64_t base) {
  std::vector<KafkaRecord> out;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  REQUIRE(decode_record_set(exact_producer_batch(records, base_timestamp, Compression::kNone, 5, 0, 3),
                            1 << 20, out, arena, &batches)
              .error == Error::kNone);
  std::string batch = storage_batch(out, batches);
  seal_batch(batch, Offset(base), kAppended);
  return batch;
}

// What a read returns of `batches` (each sealed) from `from`, stopping at next_from.
ReadResult read_of(const std::vector<const std::string*>& batches, uint64_t from, uint64_t next_from) {
  ReadResult read;
  for (const std::string* b : batches) {
    RecordReader reader(*b);
    RecordView r;
    while (reader.next(r)) {
      if (r.offset.value < from || r.offset.value >= next_from) continue;
      read.entries.push_back(make_entry(r, reader.header().appended_at, *b));
    }
    REQUIRE_FALSE(reader.error());
  }
  read.next_from = Offset(next_from);
  return read;
}

// What a read in ReadShape::kBatches returns of `batches` (each sealed), every one taken whole.
ReadResult whole_read_of(const std::vector<const std::string*>& batches, uint64_t next_from) {
  ReadResult read;
  for (const std::string* b : batches) {
    const BatchHeader h = peek_header(*b);
    EntryView& e = read.entries.emplace_back();
    e.offset = h.base_offset;
    e.appended_at = h.appended_at;
    e.batch = *b;
    e.whole_batch = h.record_count;
  }
  read.next_from = Offset(next_from);
  return read;
}

struct KafkaHeader {
  int64_t base_offset = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = 0;
  int16_t producer_epoch = 0;
  int32_t base_sequence = 0;
  int32_t count = 0;
};

// Parses one Kafka batch of `out` and checks its length and CRC.
KafkaHeader parse(std::string_view batch) {
  Reader r(batch);
  KafkaHeader h;
  h.base_offset = r.i64();
  CHECK(r.i32() == static_cast<int32_t>(batch.size() - batch_v2::kLogOverhead));
  r.i32();
  CHECK(r.i8() == 2);
  CHECK(r.u32() == crc32c(batch.substr(batch_v2::kAttributes)));
  h.attributes = r.i16();
  h.last_offset_delta = r.i32();
  h.base_timestamp = r.i64();
  h.max_timestamp = r.i64();
  h.producer_id = r.i64();
  h.producer_epoch = r.i16();
  h.base_sequence = r.i32();
  h.count = r.i32();
  return h;
}

// The answer's records as a producer's decoder reads them (the LogAppendTime bit cleared: a producer
// never sends it, and it changes nothing of the records).
std::vector<KafkaRecord> decode_answer(std::string answer, std::deque<std::string>& arena) {
  for (size_t pos = 0; pos < answer.size();) {
    const auto length = static_cast<size_t>(get_be32(answer.data() + pos + batch_v2::kLength));
    std::string batch = answer.substr(pos, batch_v2::kLogOverhead + length);
    batch[batch_v2::kAttributes + 1] =
        static_cast<char>(batch[batch_v2::kAttributes + 1] & ~batch_v2::kLogAppendTime);
    testing::reseal(batch);
    answer.replace(pos, batch.size(), batch);
    pos += batch.size();
  }
  std::vector<KafkaRecord> out;
  const DecodeResult d = decode_record_set(answer, 1 << 20, out, arena);
  INFO(d.reason);
  REQUIRE(d.error == Error::kNone);
  return out;
}

std::string encode_all(const std::vector<FetchBatch>& batches, TimestampType type) {
  std::string out;
  for (const FetchBatch& b : batches) {
    const size_t before = out.size();
    encode_fetch_batch(out, b, type);
    CHECK(out.size() - before == fetch_batch_size(b, type));
  }
  return out;
}

const std::vector<ExactRecord> kRecords = {
    {"k", std::nullopt, {}, 0}, {"k", "", {{"h", std::nullopt}, {"e", ""}}, 9}, {std::nullopt, "v", {}, -3}};

TEST_CASE("a version 2 batch goes out with its record region as stored, CreateTime") {
  const std::string stored = stored_from_producer(kRecords, 5000, 100);
  const ReadResult read = read_of({&stored}, 100, 103);
  const std::vector<FetchBatch> batches = fetch_batches(read, 100);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].stored.data() == stored.data());
  const std::string out = encode_all(batches, TimestampType::kCreateTime);
  const KafkaHeader h = parse(out);
  CHECK(h.base_offset == 100);
  CHECK(h.attributes == 0);
  CHECK(h.last_offset_delta == 2);
  CHECK(h.base_timestamp == 5000);
  CHECK(h.max_timestamp == 5009);
  CHECK(h.producer_id == 5);
  CHECK(h.producer_epoch == 0);
  CHECK(h.base_sequence == 3);
  CHECK(h.count == 3);
  CHECK(std::string_view(out).substr(batch_v2::kHeaderSize) == exact_record_region(kRecords));

  std::deque<std::string> arena;
  const std::vector<KafkaRecord> records = decode_answer(out, arena);
  REQUIRE(records.size() == 3);
  CHECK_FALSE(records[0].value.has_value());
  CHECK(records[1].value == std::optional<std::string_view>(""));
  CHECK(records[1].headers[0].value_null);
  CHECK_FALSE(records[1].headers[1].value_null);
  CHECK_FALSE(records[2].key.has_value());
  CHECK(records[1].timestamp == 5009);
  CHECK(records[2].timestamp == 4997);
}

TEST_CASE("a LogAppendTime topic sends appended_at as every record's time, the region unchanged") {
  const std::string stored = stored_from_producer(kRecords, 5000, 100);
  const ReadResult read = read_of({&stored}, 100, 103);
  const std::string out = encode_all(fetch_batches(read, 100), TimestampType::kLogAppendTime);
  const KafkaHeader h = parse(out);
  CHECK(h.attributes == batch_v2::kLogAppendTime);
  CHECK(h.base_timestamp == kAppended.micros / 1000);
  CHECK(h.max_timestamp == kAppended.micros / 1000);
  CHECK(std::string_view(out).substr(batch_v2::kHeaderSize) == exact_record_region(kRecords));
}

TEST_CASE("a batch without create times is LogAppendTime under either type") {
  BatchBuilder b;
  b.add("k", "v");
  b.add("", "w");
  std::string stored = std::move(b).finish();
  seal_batch(stored, Offset(0), kAppended);
  const ReadResult read = read_of({&stored}, 0, 2);
  for (TimestampType type : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
    const std::string out = encode_all(fetch_batches(read, 0), type);
    const KafkaHeader h = parse(out);
    CHECK(h.attributes == batch_v2::kLogAppendTime);
    CHECK(h.base_timestamp == kAppended.micros / 1000);
    CHECK(h.producer_id == -1);
    std::deque<std::string> arena;
    const std::vector<KafkaRecord> records = decode_answer(out, arena);
    REQUIRE(records.size() == 2);
    CHECK_FALSE(records[1].key.has_value());  // a native empty key is no key
  }
}

TEST_CASE("a version 1 batch is encoded anew with the nulls its empty bytes meant") {
  std::string stored =
      streamd::testing::v1_batch({{"k", "v", {}}, {"", "unkeyed", {{"h", ""}}}, {"gone", "", {}}});
  seal_batch(stored, Offset(9), kAppended);
  const ReadResult read = read_of({&stored}, 9, 12);
  const std::vector<FetchBatch> batches = fetch_batches(read, 9);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].stored.empty());
  const std::string out = encode_all(batches, TimestampType::kCreateTime);
  const KafkaHeader h = parse(out);
  CHECK(h.base_offset == 9);
  CHECK(h.attributes == batch_v2::kLogAppendTime);
  CHECK(h.last_offset_delta == 2);
  CHECK(h.base_timestamp == kAppended.micros / 1000);
  std::deque<std::string> arena;
  const std::vector<KafkaRecord> records = decode_answer(out, arena);
  REQUIRE(records.size() == 3);
  CHECK(records[0].key == std::optional<std::string_view>("k"));
  CHECK_FALSE(records[1].key.has_value());  // an empty key was no key
  CHECK(records[1].value == std::optional<std::string_view>("unkeyed"));
  CHECK(records[1].headers[0].value == "");
  CHECK_FALSE(records[2].value.has_value());  // an empty payload under a key, a tombstone
}

TEST_CASE("a fetch from inside a batch gets the whole batch, from its base") {
  const std::string stored = stored_from_producer(kRecords, 5000, 100);
  const ReadResult read = read_of({&stored}, 102, 103);
  const std::vector<FetchBatch> batches = fetch_batches(read, 102);
  REQUIRE(batches.size() == 1);
  const KafkaHeader h = parse(encode_all(batches, TimestampType::kCreateTime));
  CHECK(h.base_offset == 100);
  CHECK(h.count == 3);
}

TEST_CASE("a fetch from a hole before the first batch starts its first batch there, encoded anew") {
  const std::string stored = stored_from_producer(kRecords, 5000, 100);
  const ReadResult read = read_of({&stored}, 100, 103);
  const std::vector<FetchBatch> batches = fetch_batches(read, 96);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].stored.empty());
  const std::string out = encode_all(batches, TimestampType::kCreateTime);
  const KafkaHeader h = parse(out);
  CHECK(h.base_offset == 96);
  CHECK(h.last_offset_delta == 6);
  CHECK(h.attributes == 0);  // still the records' create times
  CHECK(h.base_timestamp == 5000);
  CHECK(h.max_timestamp == 5009);
  std::deque<std::string> arena;
  const std::vector<KafkaRecord> records = decode_answer(out, arena);
  REQUIRE(records.size() == 3);
  CHECK(records[2].timestamp == 4997);
  CHECK(records[1].headers[0].value_null);
}

TEST_CASE("one Kafka batch per stored batch, the last reaching past trailing holes") {
  const std::string first = stored_from_producer(kRecords, 5000, 100);
  const std::string second = stored_from_producer({{"x", "y", {}, 0}}, 6000, 110);  // 103..109 compacted away
  const ReadResult read = read_of({&first, &second}, 100, 115);                     // 111..114 compacted away
  const std::vector<FetchBatch> batches = fetch_batches(read, 100);
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].last_offset == 102);
  CHECK(batches[1].base_offset == 110);
  CHECK(batches[1].last_offset == 114);
  const std::string out = encode_all(batches, TimestampType::kCreateTime);
  const KafkaHeader h =
      parse(std::string_view(out).substr(fetch_batch_size(batches[0], TimestampType::kCreateTime)));
  CHECK(h.base_offset == 110);
  CHECK(h.last_offset_delta == 4);
  CHECK(h.count == 1);
}

TEST_CASE("a long record region is returned to go out after its header, not copied into the answer") {
  std::vector<ExactRecord> many;
  for (int i = 0; i < 200; ++i)
    many.push_back({"key" + std::to_string(i), std::string(100, 'a' + i % 26), {}, i});
  const std::string stored = stored_from_producer(many, 5000, 100);
  const ReadResult read = read_of({&stored}, 100, 300);
  const std::vector<FetchBatch> batches = fetch_batches(read, 100);
  REQUIRE(batches.size() == 1);
  const std::string whole = encode_all(batches, TimestampType::kLogAppendTime);

  std::string out;
  const std::string_view region = encode_fetch_batch(out, batches[0], TimestampType::kLogAppendTime, 8192);
  REQUIRE(region.size() >= 8192);
  CHECK(out.size() == batch_v2::kHeaderSize);
  CHECK(region.data() >= stored.data());  // a view of the stored batch itself
  CHECK(region.data() + region.size() == stored.data() + stored.size());
  CHECK(out + std::string(region) == whole);
  const KafkaHeader h = parse(out + std::string(region));
  CHECK(h.count == 200);

  out.clear();
  CHECK(encode_fetch_batch(out, batches[0], TimestampType::kLogAppendTime, region.size() + 1).empty());
  CHECK(out == whole);
}

TEST_CASE("a region damaged after it was stored fails the answer's CRC, not hidden by a new one") {
  std::string stored = stored_from_producer(kRecords, 5000, 100);
  stored[stored.size() - 2] = static_cast<char>(stored[stored.size() - 2] ^ 0x10);
  const ReadResult read = read_of({&stored}, 100, 103);
  std::string out;
  encode_fetch_batch(out, fetch_batches(read, 100)[0], TimestampType::kCreateTime);
  CHECK(get_be32(out.data() + batch_v2::kCrc) != crc32c(std::string_view(out).substr(batch_v2::kAttributes)));
  stored[stored.size() - 2] = static_cast<char>(stored[stored.size() - 2] ^ 0x10);
  out.clear();
  encode_fetch_batch(out, fetch_batches(read, 100)[0], TimestampType::kCreateTime);
  CHECK(get_be32(out.data() + batch_v2::kCrc) == crc32c(std::string_view(out).substr(batch_v2::kAttributes)));
}

TEST_CASE("batches read whole go out byte for byte as when read record by record") {
  const std::string first = stored_from_producer(kRecords, 5000, 100);
  const std::string second = stored_from_producer({{"x", "y", {}, 0}}, 6000, 110);  // 103..109 compacted away
  const ReadResult whole = whole_read_of({&first, &second}, 115);
  const ReadResult by_record = read_of({&first, &second}, 100, 115);
  const std::vector<FetchBatch> w = fetch_batches(whole, 100);
  const std::vector<FetchBatch> r = fetch_batches(by_record, 100);
  REQUIRE(w.size() == 2);
  REQUIRE(r.size() == 2);
  CHECK(w[0].count == 1);
  CHECK(w[0].records == 3);
  CHECK(w[1].records == 1);
  CHECK(r[0].records == 3);
  CHECK(w[1].last_offset == 114);
  for (TimestampType type : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
    CHECK(encode_all(w, type) == encode_all(r, type));
  }
}

TEST_CASE("a batch read whole that starts after the fetch offset is encoded anew from its records") {
  const std::string stored = stored_from_producer(kRecords, 5000, 100);
  ReadResult read = whole_read_of({&stored}, 103);
  REQUIRE(expand_moved_start(read, 96));
  REQUIRE(read.entries.size() == 3);
  CHECK(read.entries[0].whole_batch == 0);
  const std::vector<FetchBatch> batches = fetch_batches(read, 96);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].stored.empty());
  CHECK(batches[0].base_offset == 96);
  CHECK(encode_all(batches, TimestampType::kCreateTime) ==
        encode_all(fetch_batches(read_of({&stored}, 100, 103), 96), TimestampType::kCreateTime));

  ReadResult from_its_base = whole_read_of({&stored}, 103);
  REQUIRE(expand_moved_start(from_its_base, 100));
  CHECK(from_its_base.entries.size() == 1);
}

TEST_CASE("a read that found holes only answers one empty batch past them") {
  ReadResult read;
  read.next_from = Offset(25);
  const std::vector<FetchBatch> batches = fetch_batches(read, 20);
  REQUIRE(batches.size() == 1);
  const std::string out = encode_all(batches, TimestampType::kCreateTime);
  const KafkaHeader h = parse(out);
  CHECK(h.base_offset == 20);
  CHECK(h.last_offset_delta == 4);
  CHECK(h.count == 0);
  CHECK(out.size() == batch_v2::kHeaderSize);
  read.next_from = Offset(20);
  CHECK(fetch_batches(read, 20).empty());
}

}  // namespace
}  // namespace streamd::kafka
