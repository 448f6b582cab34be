// Tests of server/auth/stream_pattern.cc: exact names, prefixes, everything, and what is no pattern.
#include "server/auth/stream_pattern.h"

#include <catch2/catch.hpp>

namespace streamd::auth {
namespace {

TEST_CASE("a pattern is a name, a prefix ending in *, or *", "[pattern]") {
  auto exact = StreamPattern::parse("orders");
  REQUIRE(exact.has_value());
  CHECK(exact->matches("orders"));
  CHECK_FALSE(exact->matches("orders.eu"));
  CHECK_FALSE(exact->matches("order"));

  auto prefix = StreamPattern::parse("orders.*");
  REQUIRE(prefix.has_value());
  CHECK(prefix->matches("orders.eu"));
  CHECK(prefix->matches("orders."));
  CHECK_FALSE(prefix->matches("orders"));
  CHECK_FALSE(prefix->matches("ordersx"));
  CHECK(prefix->str() == "orders.*");
  CHECK_FALSE(prefix->covers_all());

  auto all = StreamPattern::parse("*");
  REQUIRE(all.has_value());
  CHECK(all->matches("anything"));
  CHECK(all->covers_all());

  for (const char* bad : {"", "**", "a*b", "or ders", "orders/*", "*x", "ö"}) {
    INFO(bad);
    CHECK_FALSE(StreamPattern::parse(bad).has_value());
  }
}

}  // namespace
}  // namespace streamd::auth
