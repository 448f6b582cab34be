// server/storage/record_batch.h: the header layout of both versions, seal_batch, check_batch's
// classification (one case per rule of docs/FORMAT.md §Validity) and the worked examples of
// docs/FORMAT.md. The record walk's rules are record_reader_test.cc's, the builder's batch_builder_test.cc's.
#include "server/storage/record_batch.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/storage/batch_builder.h"
#include "tests/storage/batch_test_helpers.h"
#include "tests/support/v1_batch.h"

namespace streamd {
namespace {

using namespace batch_format;
using namespace testing;


const std::vector<Record> kRecords = {
    {"user-1", "first payload", {}},
    {"", "unkeyed", {{"trace", "abc"}, {"empty", ""}}},
    {"user-1", "", {}},  // a tombstone
    {std::string("\0\xff\x01", 3), std::string("\x00\x80\xfe\xff", 4), {{std::string("\0", 1), "\xc3\x28"}}},
    {"k", std::string(300, 'x'), {}},  // lengths past one varint byte
};

std::string sealed(const std::vector<Record>& records, Offset base = Offset(100), Timestamp at = kTime) {
  BatchBuilder b;
  for (const auto& r : records) b.add(r);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, base, at);
  return bytes;
}

std::string sealed_v1(const std::vector<Record>& records, Offset base = Offset(100), Timestamp at = kTime) {
  std::string bytes = v1_batch(records);
  seal_batch(bytes, base, at);
  return bytes;
}

// A version 2 batch with create times and a producer, the header fields the rules below edit.
std::string sealed_full() {
  BatchBuilder b(batch_options(true, {7, 1, 40}));
  RecordView r;
  r.key = "k";
  r.payload = "v";
  r.create_time = CreateTime(1000);
  b.add(r);
  r.create_time = CreateTime(1003);
  b.add(r);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(5), kTime);
  return bytes;
}

TEST_CASE("a version 2 header sits at its documented byte offsets, little-endian") {
  BatchBuilder b(batch_options(true, {0x0102030405060708, 0x0a0b, 0x11121314}));
  RecordView r;
  r.key = "k";
  r.payload = "v";
  r.create_time = CreateTime(0x2122232425262728);
  b.add(r);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(0x3132333435363738), Timestamp(0x4142434445464748));
  const std::string_view v(bytes);
  CHECK(coding::get_fixed32(bytes.data() + kLengthOffset) == bytes.size() - 4);
  CHECK(coding::get_fixed32(bytes.data() + kCrcOffset) == crc32c(v.substr(8)));
  CHECK(static_cast<uint8_t>(bytes[kVersionOffset]) == 2);
  CHECK(bytes[kAttributesOffset] == kAttributeCreateTimes);
  CHECK(v.substr(kReservedOffset, 2) == std::string_view("\0\0", 2));
  CHECK(v.substr(kBaseOffsetOffset, 8) == "\x38\x37\x36\x35\x34\x33\x32\x31");
  CHECK(coding::get_fixed32(bytes.data() + kLastDeltaOffset) == 0);
  CHECK(coding::get_fixed32(bytes.data() + kCountOffset) == 1);
  CHECK(v.substr(kAppendedAtOffset, 8) == "\x48\x47\x46\x45\x44\x43\x42\x41");
  CHECK(v.substr(kBaseTimestampOffset, 8) == "\x28\x27\x26\x25\x24\x23\x22\x21");
  CHECK(v.substr(kMaxTimestampOffset, 8) == "\x28\x27\x26\x25\x24\x23\x22\x21");
  CHECK(v.substr(kProducerIdOffset, 8) == "\x08\x07\x06\x05\x04\x03\x02\x01");
  CHECK(v.substr(kProducerEpochOffset, 2) == "\x0b\x0a");
  CHECK(v.substr(kBaseSequenceOffset, 4) == "\x14\x13\x12\x11");
  // length 8, attributes 0, timestamp delta 0, offset delta 0, key "k", value "v", no headers
  CHECK(v.substr(kV2HeaderSize) == std::string_view("\x10\x00\x00\x00\x02k\x02v\x00", 9));

  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.version == 2);
  CHECK(h.header_size() == kV2HeaderSize);
  CHECK(h.create_times());
  CHECK(h.base_timestamp == 0x2122232425262728);
  CHECK(h.max_timestamp == 0x2122232425262728);
  CHECK(h.producer == ProducerFields{0x0102030405060708, 0x0a0b, 0x11121314});
}

TEST_CASE("a version 1 header sits at its documented byte offsets, little-endian") {
  std::string bytes =
      sealed_v1({{"k", "v", {}}}, Offset(0x0102030405060708ull), Timestamp(0x1122334455667788));
  CHECK(coding::get_fixed32(bytes.data() + kLengthOffset) == bytes.size() - 4);
  CHECK(coding::get_fixed32(bytes.data() + kCrcOffset) == crc32c(std::string_view(bytes).substr(8)));
  CHECK(static_cast<uint8_t>(bytes[kVersionOffset]) == 1);
  CHECK(std::string_view(bytes).substr(kBaseOffsetOffset, 8) == "\x08\x07\x06\x05\x04\x03\x02\x01");
  CHECK(std::string_view(bytes).substr(kAppendedAtOffset, 8) == "\x88\x77\x66\x55\x44\x33\x22\x11");
  // delta 0, key "k", payload "v", no headers
  CHECK(std::string_view(bytes).substr(kV1HeaderSize) == std::string_view("\x00\x01k\x01v\x00", 6));
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.version == 1);
  CHECK(h.header_size() == kV1HeaderSize);
  CHECK_FALSE(h.create_times());
  CHECK(h.producer == ProducerFields{});
}

TEST_CASE("the version 2 worked example of docs/FORMAT.md encodes to the documented bytes") {
  BatchBuilder b(batch_options(true));
  RecordView r;
  r.key = "user-1";
  r.payload = "hello";
  r.create_time = CreateTime(1699999999990);
  b.add(r);
  RecordView unkeyed;
  unkeyed.key_null = true;
  unkeyed.payload = "world";
  unkeyed.headers = {{"trace", "7"}};
  unkeyed.create_time = CreateTime(1699999999995);
  b.add(unkeyed);
  std::string bytes = std::move(b).finish();
  seal_batch(bytes, Offset(42), Timestamp(1700000000000000));
  const unsigned char documented[] = {
      0x64, 0x00, 0x00, 0x00, 0x15, 0xff, 0x9d, 0x54, 0x02, 0x04, 0x00, 0x00, 0x2a, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x40,
      0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00, 0xf6, 0x67, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, 0xfb,
      0x67, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x22, 0x00, 0x00, 0x00, 0x0c, 0x75, 0x73, 0x65, 0x72,
      0x2d, 0x31, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, 0x26, 0x00, 0x0a, 0x02, 0x01, 0x0a,
      0x77, 0x6f, 0x72, 0x6c, 0x64, 0x02, 0x0a, 0x74, 0x72, 0x61, 0x63, 0x65, 0x02, 0x37};
  CHECK(bytes == std::string(reinterpret_cast<const char*>(documented), sizeof documented));
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{{42, "user-1", "hello", {}, 1699999999990},
                                          {43, std::nullopt, "world", {{"trace", "7"}}, 1699999999995}});
}

TEST_CASE("the version 1 worked example of docs/FORMAT.md still reads from the documented bytes") {
  const unsigned char documented[] = {
      0x40, 0x00, 0x00, 0x00, 0x87, 0xf7, 0x2e, 0xf6, 0x01, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a,
      0x06, 0x00, 0x00, 0x06, 0x75, 0x73, 0x65, 0x72, 0x2d, 0x31, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
      0x01, 0x00, 0x05, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x01, 0x05, 0x74, 0x72, 0x61, 0x63, 0x65, 0x01, 0x37};
  const std::string bytes(reinterpret_cast<const char*>(documented), sizeof documented);
  // What version 1's encoder wrote, and what a reader makes of it now.
  std::string encoded = v1_batch({{"user-1", "hello", {}}, {"", "world", {{"trace", "7"}}}});
  seal_batch(encoded, Offset(42), Timestamp(1700000000000000));
  CHECK(encoded == bytes);
  BatchHeader h;
  REQUIRE(check_batch(bytes, h) == BatchCheck::kOk);
  CHECK(h.appended_at == Timestamp(1700000000000000));
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{{42, "user-1", "hello", {}, std::nullopt},
                                          {43, std::nullopt, "world", {{"trace", "7"}}, std::nullopt}});
}

TEST_CASE("seal_batch writes base offset, instant and CRC, in either version") {
  for (int version : {1, 2}) {
    INFO("version " << version);
    std::string bytes = version == 1 ? v1_batch({{"k", "v", {}}}) : [] {
      BatchBuilder b;
      b.add("k", "v");
      return std::move(b).finish();
    }();
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
    Walk w = walk(bytes);
    REQUIRE(w.records.size() == 1);
    CHECK(w.records[0].offset == 9000);
  }
}

TEST_CASE("an unsealed batch does not pass the check") {
  BatchBuilder b;
  b.add("k", "v");
  std::string bytes = std::move(b).finish();
  std::string reason;
  CHECK(check(bytes, &reason) == BatchCheck::kCorrupt);
  CHECK(reason == "CRC32C mismatch");
}

TEST_CASE("check_batch reads one batch out of a longer log of both versions") {
  std::string log = sealed({{"a", "1", {}}}, Offset(0)) + sealed_v1(kRecords, Offset(1)) +
                    sealed({{"z", "9", {}}}, Offset(6)) + std::string(64, '\0');
  std::string_view rest(log);
  std::vector<Offset> bases;
  std::vector<int> versions;
  for (;;) {
    BatchHeader h;
    BatchCheck c = check_batch(rest, h);
    if (c != BatchCheck::kOk) {
      CHECK(c == BatchCheck::kZeroFilled);
      break;
    }
    bases.push_back(h.base_offset);
    versions.push_back(h.version);
    rest.remove_prefix(h.total_size());
  }
  CHECK(bases == std::vector<Offset>{Offset(0), Offset(1), Offset(6)});
  CHECK(versions == std::vector<int>{2, 1, 2});
  CHECK(rest.size() == 64);
}

TEST_CASE("check_records walks a whole batch") {
  std::string reason;
  CHECK(check_records(sealed(kRecords), &reason));
  CHECK(check_records(sealed_v1(kRecords), &reason));
  std::string bad = sealed(kRecords);
  set_u32(bad, kCountOffset, 4);  // one record left over
  reseal_crc(bad);
  REQUIRE(check(bad) == BatchCheck::kOk);
  CHECK_FALSE(check_records(bad, &reason));
  CHECK(reason == "bytes after the last counted record");
}

// --- One test per rule of check_batch, for each version where the rule differs ---

TEST_CASE("a flipped byte anywhere after the length field is a CRC mismatch") {
  for (const std::string& good : {sealed(kRecords), sealed_v1(kRecords), sealed_full()}) {
    for (size_t pos = kCrcOffset; pos < good.size(); ++pos) {
      INFO("version " << int{good[kVersionOffset]} << ", byte " << pos);
      std::string bad = good;
      flip_byte(bad, pos);
      std::string reason;
      REQUIRE(check(bad, &reason) == BatchCheck::kCorrupt);
      REQUIRE(reason == "CRC32C mismatch");
    }
  }
}

TEST_CASE("a flipped byte in the length field never passes") {
  for (const std::string& batch : {sealed(kRecords), sealed_v1(kRecords)}) {
    const std::string good = batch + std::string(1024, '\0');
    for (size_t pos = kLengthOffset; pos < kCrcOffset; ++pos) {
      INFO("byte " << pos);
      std::string bad = good;
      flip_byte(bad, pos);
      BatchCheck c = check(bad);
      CHECK((c == BatchCheck::kCorrupt || c == BatchCheck::kTruncated));
    }
  }
}

TEST_CASE("a batch cut short at every length is truncated") {
  for (const std::string& good : {sealed(kRecords), sealed_v1(kRecords)}) {
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
}

TEST_CASE("a length too small for any header is corrupt") {
  std::string bad = sealed(kRecords);
  for (uint32_t length : {1u, 8u, static_cast<uint32_t>(kMinHeaderSize - 5)}) {
    INFO("length " << length);
    set_u32(bad, kLengthOffset, length);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "length shorter than a batch header");
  }
}

TEST_CASE("a version 2 batch shorter than its header is corrupt even with a matching CRC") {
  std::string bad = sealed(kRecords).substr(0, kV2HeaderSize - 1);
  set_u32(bad, kLengthOffset, static_cast<uint32_t>(bad.size() - 4));
  reseal_crc(bad);
  std::string reason;
  CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
  CHECK(reason == "length shorter than a version 2 header");
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
  for (uint8_t version : {uint8_t{0}, uint8_t{3}, uint8_t{0xFF}}) {
    INFO("version " << int{version});
    std::string bad = sealed(kRecords);
    bad[kVersionOffset] = static_cast<char>(version);
    reseal_crc(bad);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "unknown batch version");
  }
}

TEST_CASE("version 1's attributes and reserved bytes are not interpreted") {
  std::string v1 = sealed_v1(kRecords);
  v1[kAttributesOffset] = static_cast<char>(0xFF);
  v1[kReservedOffset] = 1;
  reseal_crc(v1);
  BatchHeader h;
  CHECK(check_batch(v1, h) == BatchCheck::kOk);
  CHECK(h.attributes == 0);
}

// Edits one version 2 header field of sealed_full() and reseals, expecting `reason`.
void expect_v2_header_refused(const std::function<void(std::string&)>& edit, const std::string& reason) {
  std::string bad = sealed_full();
  edit(bad);
  reseal_crc(bad);
  std::string why;
  CHECK(check(bad, &why) == BatchCheck::kCorrupt);
  CHECK(why == reason);
}

TEST_CASE("version 2: an attribute bit outside bits 0-2 is corrupt") {
  for (int bit = 3; bit < 8; ++bit) {
    INFO("bit " << bit);
    expect_v2_header_refused(
        [&](std::string& b) { b[kAttributesOffset] = static_cast<char>(b[kAttributesOffset] | (1 << bit)); },
        "unknown attribute bits");
  }
}

TEST_CASE("version 2: reserved bytes other than zero are corrupt") {
  expect_v2_header_refused([](std::string& b) { b[kReservedOffset + 1] = 1; }, "reserved bytes not zero");
}

TEST_CASE("version 2: timestamps in a batch without create times are corrupt") {
  expect_v2_header_refused([](std::string& b) { b[kAttributesOffset] = 0; },
                           "timestamps in a batch without create times");
  std::string bad = sealed(kRecords);  // no create times: both timestamps 0
  set_u64(bad, kMaxTimestampOffset, 1);
  reseal_crc(bad);
  std::string why;
  CHECK(check(bad, &why) == BatchCheck::kCorrupt);
  CHECK(why == "timestamps in a batch without create times");
}

TEST_CASE("version 2: create times in a batch without records are corrupt") {
  expect_v2_header_refused(
      [](std::string& b) {
        set_u32(b, kCountOffset, 0);
        b.resize(kV2HeaderSize);
        set_u32(b, kLengthOffset, static_cast<uint32_t>(b.size() - 4));
      },
      "create times in a batch without records");
}

TEST_CASE("version 2: producer fields that do not go together are corrupt") {
  expect_v2_header_refused([](std::string& b) { set_u64(b, kProducerIdOffset, static_cast<uint64_t>(-2)); },
                           "a negative producer id other than -1");
  expect_v2_header_refused([](std::string& b) { set_u64(b, kProducerIdOffset, static_cast<uint64_t>(-1)); },
                           "producer fields without a producer id");
  expect_v2_header_refused([](std::string& b) { b[kProducerEpochOffset + 1] = static_cast<char>(0x80); },
                           "a producer id with a negative epoch or sequence");
  expect_v2_header_refused([](std::string& b) { set_u32(b, kBaseSequenceOffset, static_cast<uint32_t>(-2)); },
                           "a producer id with a negative epoch or sequence");
}

TEST_CASE("version 2: a transactional batch needs a producer, a control batch is transactional") {
  std::string plain = sealed(kRecords);  // no producer
  plain[kAttributesOffset] = kAttributeTransactional;
  reseal_crc(plain);
  std::string why;
  CHECK(check(plain, &why) == BatchCheck::kCorrupt);
  CHECK(why == "a transactional batch without a producer id");
  expect_v2_header_refused(
      [](std::string& b) { b[kAttributesOffset] = kAttributeCreateTimes | kAttributeControl; },
      "a control batch that is not transactional");
  std::string marker = sealed_full();
  marker[kAttributesOffset] = kAttributeCreateTimes | kAttributeControl | kAttributeTransactional;
  reseal_crc(marker);
  BatchHeader h;
  CHECK(check_batch(marker, h) == BatchCheck::kOk);
  CHECK(h.control());
  CHECK(h.transactional());
}

TEST_CASE("a count above the offsets the batch covers is corrupt") {
  for (std::string bad : {sealed(kRecords), sealed_v1(kRecords)}) {
    set_u32(bad, kCountOffset, 6);  // last_delta 4 covers five offsets
    reseal_crc(bad);
    std::string reason;
    CHECK(check(bad, &reason) == BatchCheck::kCorrupt);
    CHECK(reason == "more records than offsets");
  }
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
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{kV2HeaderSize}, size_t{4096}}) {
    INFO(n << " zero bytes");
    CHECK(check(std::string(n, '\0')) == BatchCheck::kZeroFilled);
  }
  CHECK(check("") == BatchCheck::kTruncated);
  // A zero length is the end even when other bytes follow it.
  std::string zero_length = sealed(kRecords);
  set_u32(zero_length, kLengthOffset, 0);
  CHECK(check(zero_length) == BatchCheck::kZeroFilled);
}

TEST_CASE("record_size counts key, payload and header names and values") {
  CHECK(record_size(Record{"key", "payload", {{"ab", "cde"}}}) == 3 + 7 + 2 + 3);
  std::vector<HeaderView> headers = {{"ab", "cde"}, {"", "x"}};
  CHECK(record_size("key", "", headers) == 3 + 2 + 3 + 1);
  CHECK(record_size(Record{}) == 0);
}

}  // namespace
}  // namespace streamd
