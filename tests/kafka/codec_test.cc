// The Kafka primitive types of server/kafka/codec.h: round trips, and refusals that never read
// past the bytes given.
#include <catch2/catch.hpp>

#include "server/kafka/codec.h"

namespace streamd::kafka {
namespace {

TEST_CASE("fixed-width integers are big-endian") {
  std::string out;
  Writer w(out);
  w.i16(0x0102);
  w.i32(-2);
  w.i64(0x0102030405060708);
  CHECK(out.substr(0, 2) == std::string("\x01\x02", 2));
  CHECK(out.substr(2, 4) == std::string("\xff\xff\xff\xfe", 4));
  Reader r(out);
  CHECK(r.i16() == 0x0102);
  CHECK(r.i32() == -2);
  CHECK(r.i64() == 0x0102030405060708);
  CHECK(r.at_end());
  CHECK_FALSE(r.failed());
}

TEST_CASE("zig-zag varints round-trip at their edges") {
  for (int32_t v : {0, -1, 1, 63, -64, 64, 300, -300, 2147483647, -2147483647 - 1}) {
    std::string out;
    Writer(out).varint(v);
    Reader r(out);
    CHECK(r.varint() == v);
    CHECK(r.at_end());
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1} << 40, INT64_MAX, INT64_MIN}) {
    std::string out;
    Writer(out).varlong(v);
    Reader r(out);
    CHECK(r.varlong() == v);
  }
  // -1 is one byte (1), as a null key length is on the wire.
  std::string minus_one;
  Writer(minus_one).varint(-1);
  CHECK(minus_one == "\x01");
}

TEST_CASE("strings, nullable strings, bytes and compact forms round-trip") {
  std::string out;
  Writer w(out);
  w.string("topic");
  w.nullable_string(std::nullopt);
  w.bytes("abc");
  w.nullable_bytes(std::nullopt);
  w.compact_string("x");
  w.compact_nullable_string(std::nullopt);
  w.compact_array_count(2);
  w.empty_tagged_fields();
  Reader r(out);
  CHECK(r.string() == "topic");
  CHECK_FALSE(r.nullable_string().has_value());
  CHECK(r.nullable_bytes() == std::optional<std::string_view>("abc"));
  CHECK_FALSE(r.nullable_bytes().has_value());
  CHECK(r.compact_string() == "x");
  CHECK_FALSE(r.compact_nullable_string().has_value());
  // A count of 2 with one byte left cannot be an array of anything: refused before any allocation.
  CHECK_FALSE(r.compact_array_count().has_value());
  CHECK(r.failed());
}

TEST_CASE("a truncated or lying field fails the reader and reads as zero") {
  const std::string short_string("\x00\x05" "abc", 5);
  Reader r(short_string);
  CHECK(r.string().empty());
  CHECK(r.failed());
  CHECK(r.i32() == 0);

  // An array count larger than the bytes left could hold is refused before any allocation.
  std::string huge;
  Writer(huge).i32(1 << 30);
  Reader a(huge);
  CHECK(a.count(4) == 0);
  CHECK(a.failed());

  // A negative string length other than null's -1.
  std::string neg;
  Writer(neg).i16(-5);
  Reader n(neg);
  CHECK_FALSE(n.nullable_string().has_value());
  CHECK(n.failed());

  // A varint with no end.
  const std::string endless(11, '\xff');
  Reader v(endless);
  v.varlong();
  CHECK(v.failed());
}

TEST_CASE("tagged fields are skipped by their sizes") {
  std::string out;
  Writer w(out);
  w.uvarint(2);  // two fields
  w.uvarint(0);
  w.uvarint(3);
  w.raw("abc");
  w.uvarint(7);
  w.uvarint(0);
  w.i16(42);
  Reader r(out);
  r.skip_tagged_fields();
  CHECK(r.i16() == 42);
  CHECK_FALSE(r.failed());
}

TEST_CASE("the version-neutral calls write classic encodings by default and compact ones when flexible") {
  for (bool flexible : {false, true}) {
    std::string out;
    Writer w(out, flexible);
    w.str("ab");
    w.nullable_str(std::nullopt);
    w.nullable_str("c");
    w.byte_string(std::string("\0\1", 2));
    w.nullable_byte_string(std::nullopt);
    w.array(3);
    w.null_array();
    w.tags();
    w.i8(9);
    // The encodings differ in size exactly as KIP-482 says: INT16/INT32 lengths against varints.
    CHECK(out.size() == (flexible ? 3u + 1 + 2 + 3 + 1 + 1 + 1 + 1 + 1 : 4u + 2 + 3 + 6 + 4 + 4 + 4 + 0 + 1));
    Reader r(out, flexible);
    CHECK(r.str() == "ab");
    CHECK_FALSE(r.nullable_str().has_value());
    CHECK(r.nullable_str() == std::optional<std::string_view>("c"));
    CHECK(r.nullable_byte_string() == std::optional<std::string_view>(std::string_view("\0\1", 2)));
    CHECK_FALSE(r.nullable_byte_string().has_value());
    CHECK(r.array(0) == 3);
    CHECK_FALSE(r.nullable_array(0).has_value());
    CHECK_FALSE(r.failed());
    r.tags();
    CHECK(r.i8() == 9);
    CHECK(r.at_end());
    CHECK_FALSE(r.failed());
  }
}

TEST_CASE("flexible reads refuse what does not fit: a null where an array must be, lengths past the end") {
  std::string null_array;
  Writer(null_array, true).null_array();
  Reader a(null_array, true);
  CHECK(a.array() == 0);
  CHECK(a.failed());

  std::string long_string;
  Writer w(long_string);
  w.uvarint(10);  // 9 bytes claimed
  w.raw("abc");
  Reader s(long_string, true);
  CHECK(s.str().empty());
  CHECK(s.failed());

  // A tagged field whose size runs past the end.
  std::string tag;
  Writer t(tag);
  t.uvarint(1);
  t.uvarint(0);
  t.uvarint(200);
  Reader tr(tag, true);
  tr.tags();
  CHECK(tr.failed());
}

TEST_CASE("unknown tagged fields between flexible structures are skipped, whatever their tags") {
  std::string out;
  Writer w(out, true);
  w.array(1);
  w.str("topic");
  w.uvarint(2);  // the element's tagged fields: tag 5 with 2 bytes, tag 300 with none
  w.uvarint(5);
  w.uvarint(2);
  w.raw("xy");
  w.uvarint(300);
  w.uvarint(0);
  w.tags();  // the message's own, empty
  Reader r(out, true);
  REQUIRE(r.array() == 1);
  CHECK(r.str() == "topic");
  r.tags();
  r.tags();
  CHECK(r.at_end());
  CHECK_FALSE(r.failed());
}

TEST_CASE("a placeholder is patched once the length is known") {
  std::string out;
  Writer w(out);
  const size_t at = w.placeholder_i32();
  w.raw("hello");
  w.patch_i32(at, static_cast<int32_t>(w.size() - at - 4));
  Reader r(out);
  CHECK(r.i32() == 5);
}

}  // namespace
}  // namespace streamd::kafka
