// Tests of server/auth/sasl_plain.cc: RFC 4616's message and its refusals.
#include "server/auth/sasl_plain.h"

#include <catch2/catch.hpp>

namespace streamd::auth {
namespace {

using namespace std::string_literals;

TEST_CASE("PLAIN carries a user and a password, and may name the same user to act as", "[sasl]") {
  auto c = parse_sasl_plain("\0alice\0s3cret"s);
  REQUIRE(c.has_value());
  CHECK(c->user == "alice");
  CHECK(c->password == "s3cret");
  CHECK(parse_sasl_plain("alice\0alice\0pw"s).has_value());
  CHECK(parse_sasl_plain("\0alice\0"s)->password.empty());
}

TEST_CASE("PLAIN without its separators, a user, or acting as someone else is refused", "[sasl]") {
  for (const std::string& bad : {"alice"s, "\0alice"s, "\0\0pw"s, "bob\0alice\0pw"s, "\0alice\0pw\0more"s}) {
    CHECK_FALSE(parse_sasl_plain(bad).has_value());
  }
}

}  // namespace
}  // namespace streamd::auth
