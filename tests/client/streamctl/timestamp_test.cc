#include "client/streamctl/timestamp.h"

#include <catch2/catch.hpp>

namespace streamd::streamctl {
namespace {

int64_t parsed(std::string_view text) {
  auto t = parse_rfc3339_us(text);
  INFO(std::string(text));
  REQUIRE(t.ok());
  return *t;
}

TEST_CASE("format is UTC with microseconds") {
  CHECK(format_rfc3339_us(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(format_rfc3339_us(1'700'000'000'123'456) == "2023-11-14T22:13:20.123456Z");
  CHECK(format_rfc3339_us(951'782'400'000'000) == "2000-02-29T00:00:00.000000Z");
  CHECK(format_rfc3339_us(-1) == "1969-12-31T23:59:59.999999Z");
}

TEST_CASE("parse reads Z, offsets and fractions") {
  CHECK(parsed("1970-01-01T00:00:00Z") == 0);
  CHECK(parsed("2023-11-14T22:13:20.123456Z") == 1'700'000'000'123'456);
  CHECK(parsed("2023-11-14T22:13:20.1Z") == 1'700'000'000'100'000);
  CHECK(parsed("2023-11-14T22:13:20.123456789Z") == 1'700'000'000'123'456);
  CHECK(parsed("2023-11-15T00:13:20+02:00") == 1'700'000'000'000'000);
  CHECK(parsed("2023-11-14T21:13:20-01:00") == 1'700'000'000'000'000);
  CHECK(parsed("2000-02-29T00:00:00z") == 951'782'400'000'000);
}

TEST_CASE("format and parse round-trip") {
  for (int64_t us :
       {int64_t{0}, int64_t{1}, int64_t{1'234'567'890'123'456}, int64_t{4'102'444'800'000'000}}) {
    CHECK(parsed(format_rfc3339_us(us)) == us);
  }
}

TEST_CASE("malformed times are refused with the field named") {
  for (std::string_view bad : {"", "2023-11-14", "2023-11-14T22:13:20", "2023-13-01T00:00:00Z",
                               "2023-02-29T00:00:00Z", "2023-11-14T24:00:00Z", "2023-11-14T22:13:20.Z",
                               "2023-11-14T22:13:20+0200", "2023-11-14T22:13:20Zjunk", "yesterday"}) {
    auto t = parse_rfc3339_us(bad);
    INFO(std::string(bad));
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().field("field") == "time");
  }
}

TEST_CASE("a time given as -DURATION counts back from now") {
  const int64_t now = 1'700'000'000'000'000;
  CHECK(parse_time_us("-1h30m", now).value() == now - 5'400'000'000);
  CHECK(parse_time_us("-500ms", now).value() == now - 500'000);
  CHECK(parse_time_us("2023-11-14T22:13:20Z", now).value() == now);
  CHECK_FALSE(parse_time_us("-x", now).ok());
}

}  // namespace
}  // namespace streamd::streamctl
