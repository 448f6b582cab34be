#include "server/config/duration.h"

#include <catch2/catch.hpp>

namespace streamd {
namespace {

using std::chrono::milliseconds;

TEST_CASE("durations read every unit and their sums", "[duration]") {
  CHECK(parse_duration("0") == milliseconds(0));
  CHECK(parse_duration("500ms") == milliseconds(500));
  CHECK(parse_duration("10s") == milliseconds(10'000));
  CHECK(parse_duration("5m") == milliseconds(300'000));
  CHECK(parse_duration("2h") == milliseconds(7'200'000));
  CHECK(parse_duration("7d") == milliseconds(604'800'000));
  CHECK(parse_duration("1h30m") == milliseconds(5'400'000));
  CHECK(parse_duration("1m30s250ms") == milliseconds(90'250));
}

TEST_CASE("durations refuse what is not one", "[duration]") {
  for (const char* bad : {"", "10", "s", "-5s", "5 s", "1.5h", "10x", "5sm", "h1", "99999999999999999999d"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad).has_value());
  }
}

TEST_CASE("format_duration prints what parse_duration reads back", "[duration]") {
  CHECK(format_duration(milliseconds(0)) == "0");
  CHECK(format_duration(milliseconds(5'400'000)) == "1h30m");
  CHECK(format_duration(milliseconds(604'800'000)) == "7d");
  CHECK(format_duration(milliseconds(1500)) == "1s500ms");
  for (int64_t ms : {1, 999, 1000, 61'000, 86'400'001, 123'456'789}) {
    CHECK(parse_duration(format_duration(milliseconds(ms))) == milliseconds(ms));
  }
}

TEST_CASE("byte sizes read plain integers and binary suffixes", "[duration]") {
  CHECK(parse_byte_size("0") == 0u);
  CHECK(parse_byte_size("4096") == 4096u);
  CHECK(parse_byte_size("64KiB") == 65536u);
  CHECK(parse_byte_size("16MiB") == 16u << 20);
  CHECK(parse_byte_size("2GiB") == 2ull << 30);
  for (const char* bad : {"", "-1", "1.5MiB", "10MB", "10 MiB", "MiB", "99999999999999999999GiB"}) {
    INFO(bad);
    CHECK_FALSE(parse_byte_size(bad).has_value());
  }
}

}  // namespace
}  // namespace streamd
