#include "server/storage/record_batch.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

using namespace batch_format;

constexpr Timestamp kTime(1'700'000'000'123'456);

std::string sealed(const std::vector<Record>& records, Offset base = Offset(100), Timestamp at = kTime) {
  BatchBuilder b;
  for (const auto& r : records) b.add(r);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, base, at);
  return bytes;
}

std::vector<Record> decode(std::string_view batch, std::vector<Offset>* offsets = nullptr,
                           bool* error = nullptr) {
  RecordReader reader(batch);
  RecordView v;
  std::vector<Record> out;
  while (reader.next(v)) {
    Record r{std::string(v.key), std::string(v.payload), {}};
    for (const auto& h : v.headers) r.headers.emplace_back(std::string(h.name), std::string(h.value));
    out.push_back(std::move(r));
    if (offsets != nullptr) offsets->push_back(v.offset);
  }
  if (error != nullptr) *error = reader.error();
  return out;
}

// Mutations in the manner of leveldb's log_test.
void flip_byte(std::string& s, size_t pos) {
  s[pos] = static_cast<char>(s[pos] ^ 0x5A);
}
std::string truncate_tail(const std::string& s, size_t drop) {
  return s.substr(0, s.size() - drop);
}
void set_u32(std::string& s, size_t pos, uint32_t v) {
  coding::put_fixed32(s.data() + pos, v);
}
// Recomputes the CRC after a deliberate edit, so the check under test is the one that fires.
void reseal_crc(std::string& s) {
  set_u32(s, kCrcOffset, crc32c(std::string_view(s).substr(kCrcCoveredFrom)));
}

BatchCheck check(std::string_view bytes, std::string* reason = nullptr) {
  BatchHeader h;
  return check_batch(bytes, h, reason);
}

const std::vector<Record> kRecords = {
    {"user-1", "first payload", {}},
    {"", "unkeyed", {{"trace", "abc"}, {"empty", ""}}},
    {"user-1", "", {}},  // a tombstone
    {std::string("\0\xff\x01", 3), std::string("\x00\x80\xfe\xff", 4), {{std::string("\0", 1), "\xc3\x28"}}},
    {"k", std::string(300, 'x'), {}},  // lengths past one varint byte
};

TEST_CASE("a batch round trips keys, empty payloads, headers and binary bytes") {
  std::string bytes = sealed(kRecords);
  BatchHeader h;
  std::string reason;
  REQUIRE(check_batch(bytes, h, &reason) == BatchCheck::kOk);
  CHECK(h.length == bytes.size() - 4);
  CHECK(h.total_size() == bytes.size());
  CHECK(h.version == kVersion);
  CHECK(h.base_offset == Offset(100));
  CHECK(h.last_delta == 4);
  CHECK(h.record_count == 5);
  CHECK(h.appended_at == kTime);
  CHECK(h.last_offset() == Offset(104));
  CHECK(h.end_offset() == Offset(105));

  std::vector<Offset> offsets;
  bool error = true;
  CHECK(decode(bytes, &offsets, &error) == kRecords);
  CHECK_FALSE(error);
  CHECK(offsets == std::vector<Offset>{Offset(100), Offset(101), Offset(102), Offset(103), Offset(104)});
}

TEST_CASE("the header sits at its documented byte offsets, little-endian") {
  std::string bytes = sealed({{"k", "v", {}}}, Offset(0x0102030405060708ull), Timestamp(0x1122334455667788));
  CHECK(coding::get_fixed32(bytes.data() + kLengthOffset) == bytes.size() - 4);
  CHECK(coding::get_fixed32(bytes.data() + kCrcOffset) == crc32c(std::string_view(bytes).substr(8)));
  CHECK(static_cast<uint8_t>(bytes[kVersionOffset]) == 1);
  CHECK(bytes[kAttributesOffset] == 0);
  CHECK(bytes[kReservedOffset] == 0);
  CHECK(bytes[kReservedOffset + 1] == 0);
  CHECK(std::string_view(bytes).substr(kBaseOffsetOffset, 8) == "\x08\x07\x06\x05\x04\x03\x02\x01");
  CHECK(coding::get_fixed32(bytes.data() + kLastDeltaOffset) == 0);
  CHECK(coding::get_fixed32(bytes.data() + kCountOffset) == 1);
  CHECK(std::string_view(bytes).substr(kAppendedAtOffset, 8) == "\x88\x77\x66\x55\x44\x33\x22\x11");
  // delta 0, key "k", payload "v", no headers
  CHECK(std::string_view(bytes).substr(kHeaderSize) == std::string_view("\x00\x01k\x01v\x00", 6));
}

TEST_CASE("the worked example of docs/FORMAT.md encodes to the documented bytes") {
  BatchBuilder b;
  b.add("user-1", "hello");
  b.add("", "world", {{"trace", "7"}});
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(42), Timestamp(1700000000000000));
  const unsigned char documented[] = {
      0x40, 0x00, 0x00, 0x00, 0x87, 0xf7, 0x2e, 0xf6, 0x01, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a,
      0x06, 0x00, 0x00, 0x06, 0x75, 0x73, 0x65, 0x72, 0x2d, 0x31, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
      0x01, 0x00, 0x05, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x01, 0x05, 0x74, 0x72, 0x61, 0x63, 0x65, 0x01, 0x37};
  CHECK(bytes == std::string(reinterpret_cast<const char*>(documented), sizeof documented));
}

TEST_CASE("builder size and count track the records added") {
  BatchBuilder b;
  CHECK(b.empty());
  CHECK(b.size() == kHeaderSize);
  b.add("key", "payload");
  CHECK(b.count() == 1);
  CHECK(b.size() == kHeaderSize + 1 + 1 + 3 + 1 + 7 + 1);
  b.add(Record{"", "p", {{"h", "v"}}});
  CHECK(b.count() == 2);
  const size_t size = b.size();
  const std::string batch = std::move(b).finish();
  CHECK(batch.size() == size);
}

TEST_CASE("record_size counts key, payload and header names and values") {
  CHECK(record_size(Record{"key", "payload", {{"ab", "cde"}}}) == 3 + 7 + 2 + 3);
  std::vector<HeaderView> headers = {{"ab", "cde"}, {"", "x"}};
  CHECK(record_size("key", "", headers) == 3 + 2 + 3 + 1);
  CHECK(record_size(Record{}) == 0);
}

TEST_CASE("seal_batch writes base offset, instant and CRC") {
  BatchBuilder b;
  b.add("k", "v");
  std::string bytes = std::move(b).finish();
  BatchHeader unsealed = peek_header(bytes);
  CHECK(unsealed.base_offset == Offset(0));
  CHECK(unsealed.appended_at == Timestamp(0));

  seal_batch(bytes, Offset(7), Timestamp(42));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.base_offset == Offset(7));
  CHECK(h.appended_at == Timestamp(42));
  const uint32_t first_crc = h.crc;

  // Resealing at another place moves the batch and keeps it valid.
  seal_batch(bytes, Offset(9000), Timestamp(43));
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.base_offset == Offset(9000));
  CHECK(h.appended_at == Timestamp(43));
  CHECK(h.crc != first_crc);
  std::vector<Offset> offsets;
  decode(bytes, &offsets);
  CHECK(offsets == std::vector<Offset>{Offset(9000)});
}

TEST_CASE("an unsealed batch does not pass the check") {
  BatchBuilder b;
  b.add("k", "v");
  std::string bytes = std::move(b).finish();
  std::string reason;
  CHECK(check(bytes, &reason) == BatchCheck::kCorrupt);
  CHECK(reason == "CRC32C mismatch");
}

TEST_CASE("add_at and set_last_delta keep offsets across holes") {
  BatchBuilder b;
  b.add_at(0, "a", "1", {});
  b.add_at(3, "b", "2", {});
  b.add_at(7, "c", "3", {});
  b.set_last_delta(9);  // the records at deltas 8 and 9 were dropped
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(50), kTime);
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.record_count == 3);
  CHECK(h.last_delta == 9);
  CHECK(h.last_offset() == Offset(59));
  CHECK(h.end_offset() == Offset(60));
  std::vector<Offset> offsets;
  bool error = true;
  auto records = decode(bytes, &offsets, &error);
  CHECK_FALSE(error);
  CHECK(offsets == std::vector<Offset>{Offset(50), Offset(53), Offset(57)});
  CHECK(records[2].key == "c");
}

TEST_CASE("add_at alone makes the last delta the highest one added") {
  BatchBuilder b;
  b.add_at(2, "a", "", {});
  b.add_at(5, "b", "", {});
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(0), kTime);
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.last_delta == 5);
}

TEST_CASE("a batch emptied by compaction still covers its offsets") {
  BatchBuilder b;
  b.set_last_delta(4);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(10), kTime);
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.record_count == 0);
  CHECK(h.end_offset() == Offset(15));
  bool error = true;
  CHECK(decode(bytes, nullptr, &error).empty());
  CHECK_FALSE(error);
}

TEST_CASE("check_batch reads one batch out of a longer log") {
  std::string log = sealed({{"a", "1", {}}}, Offset(0)) + sealed(kRecords, Offset(1)) +
                    sealed({{"z", "9", {}}}, Offset(6)) + std::string(64, '\0');
  std::string_view rest(log);
  std::vector<Offset> bases;
  for (;;) {
    BatchHeader h;
    BatchCheck c = check_batch(rest, h);
    if (c != BatchCheck::kOk) {
      CHECK(c == BatchCheck::kZeroFilled);
      break;
    }
    bases.push_back(h.base_offset);
    rest.remove_prefix(h.total_size());
  }
  CHECK(bases == std::vector<Offset>{Offset(0), Offset(1), Offset(6)});
  CHECK(rest.size() == 64);
}

// --- One test per decode error path ---

TEST_CASE("a flipped byte anywhere after the length field is a CRC mismatch") {
  const std::string good = sealed(kRecords);
  for (size_t pos = kCrcOffset; pos < good.size(); ++pos) {
    INFO("byte " << pos);
    std::string bad = good;
    flip_byte(bad, pos);
    std::string reason;
    REQUIRE(check(bad, &reason) == BatchCheck::kCorrupt);
    REQUIRE(reason == "CRC32C mismatch");
  }
}

TEST_CASE("a flipped byte in the length field never passes") {
  const std::string good = sealed(kRecords) + std::string(1024, '\0');
  for (size_t pos = kLengthOffset; pos < kCrcOffset; ++pos) {
    INFO("byte " << pos);
    std::string bad = good;
    flip_byte(bad, pos);
    BatchCheck c = check(bad);
    CHECK((c == BatchCheck::kCorrupt || c == BatchCheck::kTruncated));
  }
}

TEST_CASE("a batch cut short at every length is truncated") {
  const std::string good = sealed(kRecords);
  for (size_t drop = 1; drop <= good.size(); ++drop) {
    std::string cut = truncate_tail(good, drop);
    INFO("kept " << cut.size() << " bytes");
    const bool all_zero = cut.find_first_not_of('\0') == std::string::npos;
    // Under four bytes with nothing but zeros cannot be told from preallocated space.
    BatchCheck expected =
        (cut.size() > 0 && cut.size() < 4 && all_zero) ? BatchCheck::kZeroFilled : BatchCheck::kTruncated;
    REQUIRE(check(cut) == expected);
  }
}

TEST_CASE("a length too small for a header is corrupt") {
  std::string bad = sealed(kRecords);
  for (uint32_t length : {1u, 8u, static_cast<uint32_t>(kHeaderSize - 5)}) {
    INFO("length " << length);
    set_u32(bad, kLengthOffset, length);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "length shorter than a batch header");
  }
}

TEST_CASE("a length beyond the largest batch is corrupt before anything is read") {
  std::string bad = sealed(kRecords);
  for (uint32_t length : {kMaxBatchBytes + 1, 0xFFFFFFFFu}) {
    set_u32(bad, kLengthOffset, length);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "length beyond the largest possible batch");
  }
  // The largest allowed length is merely more than the bytes at hand.
  set_u32(bad, kLengthOffset, kMaxBatchBytes);
  CHECK(check(bad) == BatchCheck::kTruncated);
}

TEST_CASE("a wrong CRC is corrupt") {
  std::string bad = sealed(kRecords);
  set_u32(bad, kCrcOffset, coding::get_fixed32(bad.data() + kCrcOffset) + 1);
  std::string reason;
  CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
  CHECK(reason == "CRC32C mismatch");
}

TEST_CASE("an unknown version is corrupt even with a matching CRC") {
  for (uint8_t version : {uint8_t{0}, uint8_t{2}, uint8_t{0xFF}}) {
    INFO("version " << int{version});
    std::string bad = sealed(kRecords);
    bad[kVersionOffset] = static_cast<char>(version);
    reseal_crc(bad);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "unknown batch version");
  }
}

TEST_CASE("a count above the offsets the batch covers is corrupt") {
  std::string bad = sealed(kRecords);
  set_u32(bad, kCountOffset, 6);  // last_delta 4 covers five offsets
  reseal_crc(bad);
  std::string reason;
  CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
  CHECK(reason == "more records than offsets");
}

// Found by fuzz/record_batch: a sealed batch whose range runs past the largest offset passed, and its
// records came out with offsets below its own base.
TEST_CASE("a batch whose offsets would run past the largest offset is corrupt") {
  for (uint64_t base : {~uint64_t{0} - 4, ~uint64_t{0} - 1, ~uint64_t{0}}) {
    INFO("base " << base);
    std::string bad = sealed(kRecords, Offset(base));  // last_delta 4
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "offset range past the largest offset");
  }
  CHECK(check(sealed(kRecords, Offset(~uint64_t{0} - 5))) == BatchCheck::kOk);  // end_offset() is 2^64 - 1
}

TEST_CASE("zero-filled space reads as the end of the log") {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{kHeaderSize}, size_t{4096}}) {
    INFO(n << " zero bytes");
    CHECK(check(std::string(n, '\0')) == BatchCheck::kZeroFilled);
  }
  CHECK(check("") == BatchCheck::kTruncated);
  // A zero length is the end even when other bytes follow it.
  std::string zero_length = sealed(kRecords);
  set_u32(zero_length, kLengthOffset, 0);
  CHECK(check(zero_length) == BatchCheck::kZeroFilled);
}

// Builds a batch whose header says `count` records and `last_delta`, over a hand-written record region,
// with a valid CRC: the record walk is the only check left to fail.
std::string with_records(std::string_view region, uint32_t count, uint32_t last_delta) {
  BatchBuilder b;
  std::string bytes = std::move(b).finish();
  bytes.append(region);
  set_u32(bytes, kLengthOffset, static_cast<uint32_t>(bytes.size() - 4));
  set_u32(bytes, kCountOffset, count);
  set_u32(bytes, kLastDeltaOffset, last_delta);
  seal_batch(bytes, Offset(0), kTime);
  return bytes;
}

// One good record at delta 0: key "k", payload "v", no headers.
const std::string kGoodRecord("\x00\x01k\x01v\x00", 6);

void expect_walk_error(const std::string& bytes, size_t good_records) {
  REQUIRE(check(bytes) == BatchCheck::kOk);
  bool error = false;
  CHECK(decode(bytes, nullptr, &error).size() == good_records);
  CHECK(error);
}

TEST_CASE("records: the region ends before the counted records") {
  expect_walk_error(with_records(kGoodRecord, 2, 1), 1);
}

TEST_CASE("records: a delta past last_delta") {
  expect_walk_error(with_records(std::string("\x05\x01k\x01v\x00", 6), 1, 2), 0);
}

TEST_CASE("records: deltas that do not increase") {
  expect_walk_error(with_records(kGoodRecord + kGoodRecord, 2, 1), 1);
  expect_walk_error(with_records(std::string("\x01\x00\x00\x00", 4) + kGoodRecord, 2, 1), 1);
}

TEST_CASE("records: a key longer than the region") {
  expect_walk_error(with_records(std::string("\x00\x09k\x01v\x00", 6), 1, 0), 0);
}

TEST_CASE("records: a payload longer than the region") {
  expect_walk_error(with_records(std::string("\x00\x01k\x7fv\x00", 6), 1, 0), 0);
}

TEST_CASE("records: a varint that never ends") {
  expect_walk_error(with_records(std::string(12, '\xff'), 1, 0), 0);
}

TEST_CASE("records: more headers than bytes") {
  expect_walk_error(with_records(std::string("\x00\x01k\x01v\x05", 6), 1, 0), 0);
}

TEST_CASE("records: a header cut short") {
  expect_walk_error(with_records(std::string("\x00\x00\x00\x01\x01h\x04v", 8), 1, 0), 0);
}

TEST_CASE("records: bytes after the last counted record") {
  expect_walk_error(with_records(kGoodRecord + "x", 1, 0), 1);
}

TEST_CASE("records: a hand-written region that is right decodes") {
  std::string bytes = with_records(kGoodRecord + std::string("\x02\x00\x00\x01\x01h\x01v", 8), 2, 2);
  REQUIRE(check(bytes) == BatchCheck::kOk);
  std::vector<Offset> offsets;
  bool error = true;
  auto records = decode(bytes, &offsets, &error);
  CHECK_FALSE(error);
  CHECK(records == std::vector<Record>{{"k", "v", {}}, {"", "", {{"h", "v"}}}});
  CHECK(offsets == std::vector<Offset>{Offset(0), Offset(2)});
}

}  // namespace
}  // namespace streamd
