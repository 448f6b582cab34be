#include "server/storage/coding.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace streamd {
namespace {

TEST_CASE("fixed32 and fixed64 are little-endian") {
  char buf[8];
  coding::put_fixed32(buf, 0x04030201u);
  CHECK(std::string(buf, 4) == std::string("\x01\x02\x03\x04", 4));
  CHECK(coding::get_fixed32(buf) == 0x04030201u);
  coding::put_fixed64(buf, 0x0807060504030201ull);
  CHECK(std::string(buf, 8) == std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  CHECK(coding::get_fixed64(buf) == 0x0807060504030201ull);
}

TEST_CASE("varint encodings are LEB128") {
  auto enc = [](uint64_t v) {
    std::string s;
    coding::append_varint(s, v);
    return s;
  };
  CHECK(enc(0) == std::string("\x00", 1));
  CHECK(enc(1) == "\x01");
  CHECK(enc(127) == "\x7f");
  CHECK(enc(128) == "\x80\x01");
  CHECK(enc(300) == "\xac\x02");
  CHECK(enc(std::numeric_limits<uint64_t>::max()) == "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
}

TEST_CASE("varints round trip at every width boundary") {
  std::vector<uint64_t> values = {0, 1, 2, 127, 128, 255, 256, 16383, 16384};
  for (int bits = 14; bits <= 64; bits += 7) {
    uint64_t edge = bits >= 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits);
    values.push_back(edge - 1);
    values.push_back(edge);
    if (bits < 64) values.push_back(edge + 1);
  }
  std::string buf;
  for (uint64_t v : values) coding::append_varint(buf, v);
  std::string_view in(buf);
  for (uint64_t v : values) {
    INFO(v);
    size_t before = in.size();
    uint64_t out = 0;
    REQUIRE(coding::get_varint(in, out));
    CHECK(out == v);
    CHECK(before - in.size() == coding::varint_length(v));
  }
  CHECK(in.empty());
}

TEST_CASE("a truncated varint is refused and leaves the input untouched") {
  std::string buf;
  coding::append_varint(buf, 1ull << 40);
  for (size_t n = 0; n < buf.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    std::string_view in(buf.data(), n);
    uint64_t out = 99;
    CHECK_FALSE(coding::get_varint(in, out));
    CHECK(in.size() == n);
    CHECK(out == 99);
  }
}

TEST_CASE("an overlong varint is refused") {
  // Eleven bytes: every continuation bit set past the tenth byte a 64-bit value can need.
  std::string eleven(10, '\x80');
  eleven.push_back('\x01');
  std::string_view in(eleven);
  uint64_t out = 0;
  CHECK_FALSE(coding::get_varint(in, out));
  CHECK(in.size() == eleven.size());

  // Ten bytes whose last carries bits beyond the 64th: the value does not fit a uint64_t.
  std::string too_wide(9, '\xff');
  too_wide.push_back('\x02');
  std::string_view in3(too_wide);
  CHECK_FALSE(coding::get_varint(in3, out));
  CHECK(in3.size() == too_wide.size());

  std::string endless(20, '\xff');
  std::string_view in2(endless);
  CHECK_FALSE(coding::get_varint(in2, out));
}

TEST_CASE("length-prefixed strings") {
  std::string buf;
  coding::append_varint(buf, 3);
  buf += "abc";
  coding::append_varint(buf, 0);
  buf += "tail";
  std::string_view in(buf);
  std::string_view out;
  REQUIRE(coding::get_length_prefixed(in, out));
  CHECK(out == "abc");
  REQUIRE(coding::get_length_prefixed(in, out));
  CHECK(out.empty());
  CHECK(in == "tail");

  std::string short_body;
  coding::append_varint(short_body, 5);
  short_body += "abcd";
  std::string_view in2(short_body);
  CHECK_FALSE(coding::get_length_prefixed(in2, out));

  std::string_view empty;
  CHECK_FALSE(coding::get_length_prefixed(empty, out));
}

}  // namespace
}  // namespace streamd
