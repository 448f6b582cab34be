// Tests of server/auth/crypto.cc against published vectors (FIPS 180-2, RFC 4231, RFC 7914) and of
// the codings' refusals.
#include "server/auth/crypto.h"

#include <catch2/catch.hpp>

namespace streamd::auth {
namespace {

TEST_CASE("SHA-256, HMAC-SHA-256 and PBKDF2 give the published answers", "[crypto]") {
  CHECK(hex_encode(hash(Digest::kSha256, "abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_encode(hash(Digest::kSha512, "abc")).starts_with("ddaf35a193617aba"));
  CHECK(hex_encode(hmac(Digest::kSha256, "Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // RFC 7914 §11: PBKDF2-HMAC-SHA256("passwd", "salt", 1), its first 32 bytes.
  CHECK(hex_encode(pbkdf2(Digest::kSha256, "passwd", "salt", 1)) ==
        "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
  CHECK(pbkdf2(Digest::kSha512, "p", "s", 4096).size() == 64);
}

TEST_CASE("same_bytes compares whole strings", "[crypto]") {
  CHECK(same_bytes("secret", "secret"));
  CHECK_FALSE(same_bytes("secret", "secreT"));
  CHECK_FALSE(same_bytes("secret", "secre"));
  CHECK(same_bytes("", ""));
}

TEST_CASE("base64 and hex round-trip and refuse what is not canonical", "[crypto]") {
  for (std::string bytes : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                            std::string("\0\xff\x10", 3)}) {
    CHECK(base64_decode(base64_encode(bytes)) == bytes);
    CHECK(hex_decode(hex_encode(bytes)) == bytes);
  }
  CHECK(base64_encode("foob") == "Zm9vYg==");
  for (const char* bad : {"Zm9vYg=", "Zm9vYg", "Zm9v Yg==", "Zm9vYh==", "====", "Zm9*"}) {
    INFO(bad);
    CHECK_FALSE(base64_decode(bad).has_value());
  }
  CHECK(hex_decode("0aFF") == std::string("\x0a\xff", 2));
  CHECK_FALSE(hex_decode("abc").has_value());
  CHECK_FALSE(hex_decode("zz").has_value());
}

TEST_CASE("random bytes differ from call to call", "[crypto]") {
  CHECK(random_bytes(16).size() == 16);
  CHECK(random_bytes(16) != random_bytes(16));
}

}  // namespace
}  // namespace streamd::auth
