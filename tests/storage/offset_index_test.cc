// Tests of server/storage/offset_index.cc and index_file.cc: lookups and validation of the sparse index.
#include "server/storage/offset_index.h"

#include <catch2/catch.hpp>

#include "tests/storage/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

TEST_CASE("floor finds the last entry at or before a relative offset", "[offset_index]") {
  testing::TempDir dir;
  auto index = OffsetIndex::open(posix_file_system(), dir.file("x.index"), 8);
  REQUIRE(index.ok());
  auto& oi = **index;
  CHECK_FALSE(oi.floor(RelativeOffset(5)).has_value());
  oi.append({RelativeOffset(0), FilePosition(0)});
  oi.append({RelativeOffset(10), FilePosition(4096)});
  oi.append({RelativeOffset(25), FilePosition(8200)});
  CHECK(oi.floor(RelativeOffset(0))->position == FilePosition(0));
  CHECK(oi.floor(RelativeOffset(9))->position == FilePosition(0));
  CHECK(oi.floor(RelativeOffset(10))->position == FilePosition(4096));
  CHECK(oi.floor(RelativeOffset(24))->position == FilePosition(4096));
  CHECK(oi.floor(RelativeOffset(1000))->relative == RelativeOffset(25));
}

TEST_CASE("a full index stays sparser instead of failing", "[offset_index]") {
  testing::TempDir dir;
  auto index = OffsetIndex::open(posix_file_system(), dir.file("x.index"), 2);
  REQUIRE(index.ok());
  for (uint32_t i = 0; i < 5; ++i) (*index)->append({RelativeOffset(i), FilePosition(i * 100)});
  CHECK((*index)->count() == 2);
}

TEST_CASE("valid_prefix accepts increasing entries below the log size and notices stale tails", "[offset_index]") {
  testing::TempDir dir;
  const std::string path = dir.file("x.index");
  {
    auto index = OffsetIndex::open(posix_file_system(), path, 6);
    REQUIRE(index.ok());
    (*index)->append({RelativeOffset(0), FilePosition(0)});
    (*index)->append({RelativeOffset(3), FilePosition(200)});
    (*index)->append({RelativeOffset(9), FilePosition(500)});
  }
  auto reopen = [&] {
    auto index = OffsetIndex::open(posix_file_system(), path, 6);
    REQUIRE(index.ok());
    return std::move(*index);
  };
  bool clean = false;
  CHECK(reopen()->valid_prefix(1000, clean) == 3);
  CHECK(clean);
  // An entry pointing past the log's end is stale, and so is everything after it.
  CHECK(reopen()->valid_prefix(500, clean) == 2);
  CHECK_FALSE(clean);
  CHECK(reopen()->valid_prefix(0, clean) == 0);
  // Positions must increase.
  testing::flip_byte(path, 12 + 4);  // second entry's position low byte
  std::string bytes = testing::read_file(path);
  bytes[12 + 4] = 0;
  bytes[12 + 5] = 0;
  testing::write_file(path, bytes);
  CHECK(reopen()->valid_prefix(1000, clean) == 1);
  CHECK_FALSE(clean);
}

}  // namespace
}  // namespace streamd
