#include "client/duration.h"

#include <catch2/catch.hpp>

namespace streamd::client {
namespace {

using std::chrono::milliseconds;

milliseconds ok(std::string_view text) {
  auto d = parse_duration(text);
  INFO(std::string(text));
  REQUIRE(d.ok());
  return *d;
}

TEST_CASE("durations of docs/SEMANTICS.md §8") {
  CHECK(ok("500ms") == milliseconds(500));
  CHECK(ok("10s") == milliseconds(10'000));
  CHECK(ok("5m") == milliseconds(300'000));
  CHECK(ok("2h") == milliseconds(7'200'000));
  CHECK(ok("7d") == milliseconds(604'800'000));
  CHECK(ok("1h30m") == milliseconds(5'400'000));
  CHECK(ok("0") == milliseconds(0));
  CHECK(ok("0s") == milliseconds(0));
  CHECK(ok("1m500ms") == milliseconds(60'500));
}

TEST_CASE("malformed durations are refused with the field named") {
  for (std::string_view bad : {"", "10", "s", "-5s", "1.5s", "5x", "10 s", "1h30", "99999999999999999999s"}) {
    auto d = parse_duration(bad);
    INFO(std::string(bad));
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().is(ErrorCode::kStreamMisconfigured));
    CHECK(d.error().field("field") == "duration");
    CHECK(d.error().field("value") == bad);
  }
}

TEST_CASE("format_duration reads back") {
  CHECK(format_duration(milliseconds(0)) == "0");
  CHECK(format_duration(milliseconds(5'400'000)) == "1h30m");
  CHECK(format_duration(milliseconds(250)) == "250ms");
  CHECK(format_duration(milliseconds(93'600'000)) == "1d2h");
  for (int64_t ms : {1ll, 999ll, 1000ll, 61'001ll, 86'400'000ll * 400 + 7}) {
    CHECK(ok(format_duration(milliseconds(ms))) == milliseconds(ms));
  }
}

}  // namespace
}  // namespace streamd::client
