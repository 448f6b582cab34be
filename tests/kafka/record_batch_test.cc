// server/kafka/record_batch.h: decoding what producers send (validation, decompression) and encoding
// what Fetch answers.
#include "server/kafka/record_batch.h"

#include <catch2/catch.hpp>

#include "tests/kafka/batch_helpers.h"

namespace streamd::kafka {
namespace {

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

EntryView entry(uint64_t offset, std::string_view key, std::string_view payload, int64_t micros = 5'000'000) {
  EntryView e;
  e.offset = Offset(offset);
  e.appended_at = Timestamp(micros);
  e.key = key;
  e.payload = payload;
  return e;
}

TEST_CASE("an encoded batch carries LogAppendTime, its offsets, and a valid CRC") {
  std::vector<EntryView> entries = {entry(10, "k", "v"), entry(12, "", "unkeyed"), entry(13, "gone", "")};
  entries[0].headers.push_back({"h", "x"});
  std::string out;
  encode_batch(out, 9, entries.data(), entries.size());
  CHECK(out.size() == encoded_batch_size(9, entries.data(), entries.size()));
  Reader r(out);
  CHECK(r.i64() == 9);
  CHECK(r.i32() == static_cast<int32_t>(out.size() - batch_v2::kLogOverhead));
  r.i32();
  CHECK(r.i8() == 2);
  CHECK(r.u32() == crc32c(std::string_view(out).substr(batch_v2::kAttributes)));
  CHECK(r.i16() == batch_v2::kLogAppendTime);
  CHECK(r.i32() == 4);      // last offset delta: 13 - 9
  CHECK(r.i64() == 5000);   // base timestamp, ms
  CHECK(r.i64() == 5000);   // max timestamp

  // The broker's own decoder reads it back (it would be a valid produce), with the mapping applied.
  std::vector<KafkaRecord> decoded;
  std::deque<std::string> arena;
  std::string as_produced = out;
  as_produced[batch_v2::kAttributes + 1] = 0;  // not LogAppendTime: irrelevant to decoding
  reseal(as_produced);
  REQUIRE(decode_record_set(as_produced, 1 << 20, decoded, arena).error == Error::kNone);
  REQUIRE(decoded.size() == 3);
  CHECK(decoded[0].key == std::optional<std::string_view>("k"));
  CHECK(decoded[0].headers.size() == 1);
  CHECK_FALSE(decoded[1].key.has_value());                           // an empty key is null
  CHECK(decoded[1].value == std::optional<std::string_view>("unkeyed"));
  CHECK_FALSE(decoded[2].value.has_value());                         // an empty payload under a key: a tombstone
}

TEST_CASE("an empty batch still moves a consumer past holes") {
  std::string out;
  encode_batch(out, 20, nullptr, 0, 24);
  Reader r(out);
  CHECK(r.i64() == 20);
  r.i32();
  r.i32();
  r.i8();
  r.u32();
  r.i16();
  CHECK(r.i32() == 4);
  r.i64();
  r.i64();
  r.i64();
  r.i16();
  r.i32();
  CHECK(r.i32() == 0);
  CHECK(r.at_end());
}

}  // namespace
}  // namespace streamd::kafka
