// server/kafka/record_batch.h: decoding what producers send (validation, decompression) and the stored
// batch it becomes (fetch_batch_test.cc has the way back).
#include "server/kafka/record_batch.h"

#include <catch2/catch.hpp>
#include <tuple>

#include "server/storage/record_reader.h"
#include "tests/kafka/batch_helpers.h"

namespace streamd::kafka {
namespace {

using testing::exact_producer_batch;
using testing::exact_record_region;
using testing::ExactRecord;
using testing::producer_batch;
using testing::reseal;
using testing::TestRecord;

DecodeResult decode(const std::string& set, std::vector<KafkaRecord>& out, std::deque<std::string>& arena,
                    size_t max_inflated = 1 << 20) {
  return decode_record_set(set, max_inflated, out, arena);
}

TEST_CASE("a producer batch decodes to its keys, values and headers") {
  const std::string set = producer_batch({{"k1", "v1", {{"h", "x"}}}, {"", "v2", {}}});
  std::vector<KafkaRecord> out;
  std::deque<std::string> arena;
  const DecodeResult d = decode(set, out, arena);
  INFO(d.reason);
  REQUIRE(d.error == Error::kNone);
  REQUIRE(out.size() == 2);
  CHECK(out[0].key == std::optional<std::string_view>("k1"));
  CHECK(out[0].value == std::optional<std::string_view>("v1"));
  REQUIRE(out[0].headers.size() == 1);
  CHECK(out[0].headers[0].name == "h");
  CHECK(out[0].headers[0].value == "x");
  CHECK_FALSE(out[1].key.has_value());
  CHECK(out[1].value == std::optional<std::string_view>("v2"));
}

TEST_CASE("every compression codec's batch decodes to the same records") {
  const std::vector<TestRecord> records = {{"a", std::string(500, 'x'), {}}, {"b", "short", {{"n", "v"}}}};
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4, Compression::kZstd}) {
    INFO(compression_name(c));
    std::vector<KafkaRecord> out;
    std::deque<std::string> arena;
    const DecodeResult d = decode(producer_batch(records, c), out, arena);
    INFO(d.reason);
    REQUIRE(d.error == Error::kNone);
    REQUIRE(out.size() == 2);
    CHECK(out[0].value == std::optional<std::string_view>(records[0].value));
    CHECK(out[1].headers.size() == 1);
  }
}

TEST_CASE("two batches in one record set decode in order") {
  const std::string set = producer_batch({{"", "1", {}}}) + producer_batch({{"", "2", {}}, {"", "3", {}}});
  std::vector<KafkaRecord> out;
  std::deque<std::string> arena;
  REQUIRE(decode(set, out, arena).error == Error::kNone);
  REQUIRE(out.size() == 3);
  CHECK(out[2].value == std::optional<std::string_view>("3"));
}

TEST_CASE("a damaged batch is CORRUPT_MESSAGE and decodes nothing") {
  std::string set = producer_batch({{"k", "value", {}}});
  std::vector<KafkaRecord> out;
  std::deque<std::string> arena;
  SECTION("a flipped byte fails the CRC") {
    set[set.size() - 3] ^= 0x40;
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  SECTION("a count above the records present") {
    put_be32(set.data() + batch_v2::kRecordCount, 2);
    reseal(set);
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  SECTION("a count below the records present") {
    set = producer_batch({{"k", "1", {}}, {"k", "2", {}}});
    put_be32(set.data() + batch_v2::kRecordCount, 1);
    reseal(set);
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  SECTION("a length past the record set") {
    set.resize(set.size() - 1);
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  SECTION("bytes after the last batch that are not a batch") {
    set += "garbage";
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  SECTION("a compressed record set that does not inflate") {
    set = producer_batch({{"k", "v", {}}}, Compression::kZstd);
    set[batch_v2::kHeaderSize + 2] ^= 0x55;
    reseal(set);
    CHECK(decode(set, out, arena).error == Error::kCorruptMessage);
  }
  CHECK(out.empty());
}

TEST_CASE("control and transactional batches are INVALID_RECORD, magic 1 is refused by format") {
  std::vector<KafkaRecord> out;
  std::deque<std::string> arena;
  CHECK(decode(producer_batch({{"", "v", {}}}, Compression::kNone, batch_v2::kControl), out, arena).error ==
        Error::kInvalidRecord);
  CHECK(decode(producer_batch({{"", "v", {}}}, Compression::kNone, batch_v2::kTransactional), out, arena).error ==
        Error::kInvalidRecord);
  std::string old = producer_batch({{"", "v", {}}});
  old[batch_v2::kMagic] = 1;
  CHECK(decode(old, out, arena).error == Error::kUnsupportedForMessageFormat);
  CHECK(out.empty());
}

TEST_CASE("a record set inflating past the bound is refused") {
  std::vector<KafkaRecord> out;
  std::deque<std::string> arena;
  const std::string set = producer_batch({{"", std::string(100000, 'z'), {}}}, Compression::kGzip);
  CHECK(decode(set, out, arena, 1000).error == Error::kCorruptMessage);
}

TEST_CASE("nulls, empties, header nulls and timestamps decode exactly as sent") {
  const std::string set = exact_producer_batch({{"k", std::nullopt, {}, 0},  // a tombstone
                                                {"k", "", {}, 5},            // an empty value
                                                {std::nullopt, "v", {{"h", std::nullopt}, {"e", ""}}, -7},
                                                {"", "v", {}, 2}},  // an empty key
                                               1'700'000'000'000);
  std::vector<KafkaRecord> out;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  const DecodeResult d = decode_record_set(set, 1 << 20, out, arena, &batches);
  INFO(d.reason);
  REQUIRE(d.error == Error::kNone);
  REQUIRE(out.size() == 4);
  CHECK(out[0].key == std::optional<std::string_view>("k"));
  CHECK_FALSE(out[0].value.has_value());
  CHECK(out[1].value == std::optional<std::string_view>(""));
  CHECK_FALSE(out[2].key.has_value());
  REQUIRE(out[2].headers.size() == 2);
  CHECK(out[2].headers[0].value_null);
  CHECK_FALSE(out[2].headers[1].value_null);
  CHECK(out[3].key == std::optional<std::string_view>(""));
  CHECK(out[0].timestamp == 1'700'000'000'000);
  CHECK(out[1].timestamp == 1'700'000'000'005);
  CHECK(out[2].timestamp == 1'699'999'999'993);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].max_timestamp == 1'700'000'000'005);  // computed, not the producer's header
  CHECK(batches[0].storable);
  CHECK(batches[0].count == 4);
}

TEST_CASE(
    "producer fields: none without a producer id, kept with one, refused when they do not go together") {
  std::vector<KafkaRecord> out;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  REQUIRE(decode_record_set(exact_producer_batch({{"k", "v"}}, 0, Compression::kNone, -1, 0, 0), 1 << 20, out,
                            arena, &batches)
              .error == Error::kNone);
  CHECK(batches[0].producer == ProducerFields{});
  REQUIRE(decode_record_set(exact_producer_batch({{"k", "v"}}, 0, Compression::kNone, 7, 2, 40), 1 << 20, out,
                            arena, &batches)
              .error == Error::kNone);
  CHECK(batches[1].producer == ProducerFields{7, 2, 40});
  for (auto [id, epoch, seq] :
       {std::tuple{int64_t{-2}, int16_t{-1}, -1}, std::tuple{int64_t{7}, int16_t{-1}, 0},
        std::tuple{int64_t{7}, int16_t{0}, -5}}) {
    INFO(id << " " << epoch << " " << seq);
    const DecodeResult d =
        decode_record_set(exact_producer_batch({{"k", "v"}}, 0, Compression::kNone, id, epoch, seq), 1 << 20,
                          out, arena, &batches);
    CHECK(d.error == Error::kCorruptMessage);
  }
  CHECK(batches.size() == 2);
}

// The stored batch, sealed, read back with the storage reader.
std::vector<RecordView> stored_records(std::string& batch, BatchHeader& h) {
  seal_batch(batch, Offset(100), Timestamp(1'800'000'000'000'000));
  REQUIRE(check_batch(batch, h) == BatchCheck::kOk);
  std::string reason;
  REQUIRE(check_records(batch, &reason));
  RecordReader reader(batch);
  std::vector<RecordView> out;
  RecordView r;
  while (reader.next(r)) out.push_back(r);
  return out;
}

TEST_CASE("one storable batch is stored with the producer's record region byte for byte") {
  const std::vector<ExactRecord> records = {
      {"k", std::nullopt, {}, 0}, {"k", "", {{"h", std::nullopt}}, 9}, {std::nullopt, "v", {}, -3}};
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    INFO(compression_name(c));
    std::vector<KafkaRecord> out;
    std::vector<KafkaBatch> batches;
    std::deque<std::string> arena;
    REQUIRE(
        decode_record_set(exact_producer_batch(records, 5000, c, 12, 1, 77), 1 << 20, out, arena, &batches)
            .error == Error::kNone);
    std::string batch = storage_batch(out, batches);
    CHECK(std::string_view(batch).substr(batch_format::kV2HeaderSize) == exact_record_region(records));
    BatchHeader h;
    const std::vector<RecordView> read = stored_records(batch, h);
    CHECK(h.create_times());
    CHECK(h.base_timestamp == 5000);
    CHECK(h.max_timestamp == 5009);
    CHECK(h.producer == ProducerFields{12, 1, 77});
    REQUIRE(read.size() == 3);
    CHECK(read[0].payload_null);
    CHECK(read[0].tombstone());
    CHECK_FALSE(read[1].payload_null);
    CHECK(read[1].headers[0].value_null);
    CHECK(read[2].key_null);
    CHECK(read[1].create_time == CreateTime(5009));
    CHECK(read[2].create_time == CreateTime(4997));
  }
}

TEST_CASE("records a stored region cannot keep as they came are encoded anew, exactly") {
  std::vector<ExactRecord> odd = {{"a", "1", {}, 0}, {"b", std::nullopt, {{"h", std::nullopt}}, 4}};
  SECTION("offset deltas that are not the records' indexes") {
    odd[0].offset_delta = 3;
    odd[1].offset_delta = 8;
  }
  SECTION("record attributes other than 0") {
    odd[1].attributes = 1;
  }
  std::vector<KafkaRecord> out;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  REQUIRE(decode_record_set(exact_producer_batch(odd, 70), 1 << 20, out, arena, &batches).error ==
          Error::kNone);
  CHECK_FALSE(batches[0].storable);
  std::string batch = storage_batch(out, batches);
  BatchHeader h;
  const std::vector<RecordView> read = stored_records(batch, h);
  REQUIRE(read.size() == 2);
  CHECK(h.last_delta == 1);
  CHECK(read[1].offset == Offset(101));
  CHECK(read[1].payload_null);
  CHECK(read[1].headers[0].value_null);
  CHECK(read[1].create_time == CreateTime(74));
}

TEST_CASE("several batches of one record set become one stored batch in order") {
  const std::string set = exact_producer_batch({{"a", "1", {}, 0}}, 100, Compression::kNone, 3, 0, 10) +
                          exact_producer_batch({{"b", std::nullopt, {}, 0}, {std::nullopt, "", {}, 1}}, 50);
  std::vector<KafkaRecord> out;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  REQUIRE(decode_record_set(set, 1 << 20, out, arena, &batches).error == Error::kNone);
  std::string batch = storage_batch(out, batches);
  BatchHeader h;
  const std::vector<RecordView> read = stored_records(batch, h);
  REQUIRE(read.size() == 3);
  CHECK(h.producer == ProducerFields{3, 0, 10});  // the first batch's
  CHECK(h.max_timestamp == 100);
  CHECK(read[0].create_time == CreateTime(100));
  CHECK(read[1].create_time == CreateTime(50));
  CHECK(read[1].payload_null);
  CHECK(read[2].key_null);
  CHECK(read[2].payload.empty());
  CHECK_FALSE(read[2].payload_null);
  CHECK(read[2].create_time == CreateTime(51));
}

}  // namespace
}  // namespace streamd::kafka
