// server/storage/record_reader.h: the record walk of both versions, one case per rule of docs/FORMAT.md
// §Validity, over hand-written record regions in batches whose header and CRC are right, so the walk is
// the only check left to fail. Version 1 batches are those version 1's encoder wrote
// (tests/support/v1_batch.h).
#include "server/storage/record_reader.h"

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


// --- Version 1 ---

// A version 1 batch whose header says `count` records and `last_delta`, over a hand-written region.
std::string v1_with_records(std::string_view region, uint32_t count, uint32_t last_delta) {
  std::string bytes = V1BatchBuilder().finish();
  bytes.append(region);
  set_u32(bytes, kLengthOffset, static_cast<uint32_t>(bytes.size() - 4));
  set_u32(bytes, kCountOffset, count);
  set_u32(bytes, kLastDeltaOffset, last_delta);
  seal_batch(bytes, Offset(0), kTime);
  return bytes;
}

// One good version 1 record at delta 0: key "k", payload "v", no headers.
const std::string kGoodV1Record("\x00\x01k\x01v\x00", 6);

void expect_walk_error(const std::string& bytes, size_t good_records, const std::string& reason = "") {
  REQUIRE(check(bytes) == BatchCheck::kOk);
  Walk w = walk(bytes);
  CHECK(w.records.size() == good_records);
  CHECK(w.error);
  if (!reason.empty()) CHECK(w.reason == reason);
  CHECK_FALSE(check_records(bytes));
}

TEST_CASE("version 1: records read back with the nulls their empty bytes meant") {
  std::string bytes = v1_batch({{"user-1", "first", {}},
                                {"", "unkeyed", {{"trace", "abc"}, {"empty", ""}}},
                                {"user-1", "", {}},
                                {"", "", {}}});
  seal_batch(bytes, Offset(7), kTime);
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{
                         {7, "user-1", "first", {}, std::nullopt},
                         {8, std::nullopt, "unkeyed", {{"trace", "abc"}, {"empty", ""}}, std::nullopt},
                         {9, "user-1", std::nullopt, {}, std::nullopt},  // a tombstone, as version 1 meant it
                         {10, std::nullopt, "", {}, std::nullopt},       // no key: an empty payload is data
                     });
}

TEST_CASE("version 1 records: the region ends before the counted records") {
  expect_walk_error(v1_with_records(kGoodV1Record, 2, 1), 1);
}

TEST_CASE("version 1 records: a delta past last_delta") {
  expect_walk_error(v1_with_records(std::string("\x05\x01k\x01v\x00", 6), 1, 2), 0);
}

TEST_CASE("version 1 records: deltas that do not increase") {
  expect_walk_error(v1_with_records(kGoodV1Record + kGoodV1Record, 2, 1), 1);
  expect_walk_error(v1_with_records(std::string("\x01\x00\x00\x00", 4) + kGoodV1Record, 2, 1), 1);
}

TEST_CASE("version 1 records: a key longer than the region") {
  expect_walk_error(v1_with_records(std::string("\x00\x09k\x01v\x00", 6), 1, 0), 0);
}

TEST_CASE("version 1 records: a payload longer than the region") {
  expect_walk_error(v1_with_records(std::string("\x00\x01k\x7fv\x00", 6), 1, 0), 0);
}

TEST_CASE("version 1 records: a varint that never ends") {
  expect_walk_error(v1_with_records(std::string(12, '\xff'), 1, 0), 0);
}

TEST_CASE("version 1 records: more headers than bytes") {
  expect_walk_error(v1_with_records(std::string("\x00\x01k\x01v\x05", 6), 1, 0), 0);
}

TEST_CASE("version 1 records: a header cut short") {
  expect_walk_error(v1_with_records(std::string("\x00\x00\x00\x01\x01h\x04v", 8), 1, 0), 0);
}

TEST_CASE("version 1 records: bytes after the last counted record") {
  expect_walk_error(v1_with_records(kGoodV1Record + "x", 1, 0), 1, "bytes after the last counted record");
}

TEST_CASE("version 1 records: a hand-written region that is right decodes") {
  std::string bytes = v1_with_records(kGoodV1Record + std::string("\x02\x00\x00\x01\x01h\x01v", 8), 2, 2);
  Walk w = walk(bytes);
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{{0, "k", "v", {}, std::nullopt},
                                          {2, std::nullopt, "", {{"h", "v"}}, std::nullopt}});
}

// --- Version 2 ---

// A version 2 batch over a hand-written region; with create times when max_timestamp is given.
std::string v2_with_records(std::string_view region, uint32_t count, uint32_t last_delta,
                            std::optional<int64_t> max_timestamp = std::nullopt, int64_t base_timestamp = 0) {
  std::string bytes = BatchBuilder::wrap(
      batch_options(max_timestamp.has_value()),
      EncodedRecords{region, count, last_delta, base_timestamp, max_timestamp.value_or(0)});
  seal_batch(bytes, Offset(0), kTime);
  return bytes;
}

// Record bodies (after the length): attributes, timestamp delta, offset delta, key, value, headers.
std::string body(int64_t offset_delta, const std::string& rest = zz(1) + "k" + zz(1) + "v" + zz(0),
                 int64_t timestamp_delta = 0) {
  return std::string(1, '\0') + zz(timestamp_delta) + zz(offset_delta) + rest;
}
const std::string kGoodV2Record = v2_record(body(0));

TEST_CASE("version 2 records: a hand-written region that is right decodes") {
  const std::string second =
      v2_record(body(2, zz(-1) + zz(-1) + zz(2) + zz(1) + "h" + zz(-1) + zz(1) + "e" + zz(0)));
  Walk w = walk(v2_with_records(kGoodV2Record + second, 2, 2));
  CHECK_FALSE(w.error);
  CHECK(w.records == std::vector<Decoded>{
                         {0, "k", "v", {}, std::nullopt},
                         {2, std::nullopt, std::nullopt, {{"h", std::nullopt}, {"e", ""}}, std::nullopt}});
}

TEST_CASE("version 2 records: the region ends before the counted records") {
  expect_walk_error(v2_with_records(kGoodV2Record, 2, 1), 1, "a record's length does not fit the batch");
}

TEST_CASE("version 2 records: bytes after the last counted record") {
  expect_walk_error(v2_with_records(kGoodV2Record + "x", 1, 0), 1, "bytes after the last counted record");
}

TEST_CASE("version 2 records: a negative record length") {
  expect_walk_error(v2_with_records(zz(-2) + body(0), 1, 0), 0, "a record's length does not fit the batch");
}

TEST_CASE("version 2 records: a record length past the batch") {
  expect_walk_error(v2_with_records(zz(40) + body(0), 1, 0), 0, "a record's length does not fit the batch");
}

TEST_CASE("version 2 records: a length varint that never ends") {
  expect_walk_error(v2_with_records(std::string(12, '\xff'), 1, 0), 0,
                    "a record's length does not fit the batch");
}

TEST_CASE("version 2 records: attributes other than 0") {
  std::string b = body(0);
  b[0] = 1;
  expect_walk_error(v2_with_records(v2_record(b), 1, 0), 0, "a record's attributes are not 0");
}

TEST_CASE("version 2 records: a timestamp in a batch without create times") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(0), 5)), 1, 0), 0,
                    "a record has a timestamp in a batch without create times");
}

TEST_CASE("version 2 records: a negative offset delta") {
  expect_walk_error(v2_with_records(v2_record(body(-1)), 1, 0), 0,
                    "a record's offset delta does not increase within last_delta");
}

TEST_CASE("version 2 records: a delta past last_delta") {
  expect_walk_error(v2_with_records(v2_record(body(3)), 1, 2), 0,
                    "a record's offset delta does not increase within last_delta");
}

TEST_CASE("version 2 records: deltas that do not increase") {
  expect_walk_error(v2_with_records(kGoodV2Record + kGoodV2Record, 2, 1), 1,
                    "a record's offset delta does not increase within last_delta");
  expect_walk_error(v2_with_records(v2_record(body(1)) + kGoodV2Record, 2, 1), 1,
                    "a record's offset delta does not increase within last_delta");
}

TEST_CASE("version 2 records: a key length below -1") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(-2) + zz(1) + "v" + zz(0))), 1, 0), 0,
                    "a record's key length does not fit the record");
}

TEST_CASE("version 2 records: a key longer than the record") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(9) + "k" + zz(1) + "v" + zz(0))), 1, 0), 0,
                    "a record's key length does not fit the record");
}

TEST_CASE("version 2 records: a value length below -1") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(1) + "k" + zz(-3) + zz(0))), 1, 0), 0,
                    "a record's value length does not fit the record");
}

TEST_CASE("version 2 records: a value longer than the record") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(1) + "k" + zz(5) + "v" + zz(0))), 1, 0), 0,
                    "a record's value length does not fit the record");
}

TEST_CASE("version 2 records: a negative header count") {
  expect_walk_error(v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(-1))), 1, 0), 0,
                    "a record's header count does not fit the record");
}

TEST_CASE("version 2 records: more headers than the record has bytes") {
  expect_walk_error(
      v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(2) + zz(0) + zz(0))), 1, 0), 0,
      "a header's name length does not fit the record");
  expect_walk_error(v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(40))), 1, 0), 0,
                    "a record's header count does not fit the record");
}

TEST_CASE("version 2 records: a null header name") {
  expect_walk_error(
      v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(1) + zz(-1) + zz(0))), 1, 0), 0,
      "a header's name length does not fit the record");
}

TEST_CASE("version 2 records: a header value length below -1") {
  expect_walk_error(
      v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(1) + zz(1) + "h" + zz(-2))), 1, 0), 0,
      "a header's value length does not fit the record");
}

TEST_CASE("version 2 records: a header value longer than the record") {
  expect_walk_error(
      v2_with_records(v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(1) + zz(1) + "h" + zz(7) + "x")), 1,
                      0),
      0, "a header's value length does not fit the record");
}

TEST_CASE("version 2 records: a record length that does not match its contents") {
  // One byte inside the record after its headers.
  expect_walk_error(v2_with_records(v2_record(body(0) + "x"), 1, 0), 0,
                    "a record's length does not match its contents");
  // A length one short: the record's last field runs past it.
  const std::string b = body(0);
  expect_walk_error(v2_with_records(zz(static_cast<int64_t>(b.size() - 1)) + b, 1, 0), 0);
}

TEST_CASE("version 2 records: create times read as base plus delta, within max_timestamp") {
  const std::string region = v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(0), 0)) +
                             v2_record(body(1, zz(1) + "k" + zz(1) + "v" + zz(0), -7)) +
                             v2_record(body(2, zz(1) + "k" + zz(1) + "v" + zz(0), 3));
  Walk w = walk(v2_with_records(region, 3, 2, 1003, 1000));
  CHECK_FALSE(w.error);
  REQUIRE(w.records.size() == 3);
  CHECK(w.records[0].create_time == 1000);
  CHECK(w.records[1].create_time == 993);
  CHECK(w.records[2].create_time == 1003);
}

TEST_CASE("version 2 records: a timestamp past max_timestamp") {
  const std::string region = v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(0), 4));
  expect_walk_error(v2_with_records(region, 1, 0, 1003, 1000), 0,
                    "a record's timestamp is past the batch's max_timestamp");
}

TEST_CASE("version 2 records: a max_timestamp above every record's") {
  const std::string region = v2_record(body(0, zz(1) + "k" + zz(1) + "v" + zz(0), 2));
  expect_walk_error(v2_with_records(region, 1, 0, 1003, 1000), 1,
                    "max_timestamp is not the largest record timestamp");
}

}  // namespace
}  // namespace streamd
