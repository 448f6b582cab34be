#include "client/streamctl/text_encoding.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd::streamctl {
namespace {

TEST_CASE("base64 RFC 4648 vectors") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foob") == "Zm9vYg==");
  CHECK(base64_encode("fooba") == "Zm9vYmE=");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_decode("Zm9vYmE=").value() == "fooba");
  CHECK(base64_decode("Zg==").value() == "f");
  CHECK(base64_decode("").value().empty());
}

TEST_CASE("base64 round-trips every byte value") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t cut = 0; cut < 4; ++cut) {
    std::string bytes = all.substr(cut);
    CHECK(base64_decode(base64_encode(bytes)).value() == bytes);
  }
  CHECK(base64_encode(std::string("\xff\xfe\xfd", 3)) == "//79");
}

TEST_CASE("base64 refuses malformed text") {
  for (std::string_view bad : {"Zg=", "Z===", "Zg=a", "Z*==", "=Zg=", "Zm9v====", "Zg==Zg=="}) {
    INFO(std::string(bad));
    CHECK_FALSE(base64_decode(bad).has_value());
  }
}

TEST_CASE("UTF-8 validation follows RFC 3629") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("\xC3\xA9"));          // é
  CHECK(is_valid_utf8("\xE2\x82\xAC"));      // €
  CHECK(is_valid_utf8("\xF0\x9F\x98\x80"));  // 😀
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  CHECK(is_valid_utf8(std::string("\0", 1)));
  CHECK_FALSE(is_valid_utf8("\xC3"));              // truncated
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xE0\x80\xAF"));      // overlong
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\x80"));              // lone continuation
  CHECK_FALSE(is_valid_utf8("\xFF"));
  CHECK(utf8_sequence_length("\xE2\x82\xAC rest") == 3);
  CHECK(utf8_sequence_length("\xE2\x82") == 0);
}

}  // namespace
}  // namespace streamd::streamctl
