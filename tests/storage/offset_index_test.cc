// Tests of server/storage/offset_index.cc and index_file.cc: lookups, validation and growth of the
// sparse index.
#include "server/storage/offset_index.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "server/storage/index_file.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
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

TEST_CASE("a growing index starts empty, takes a page, then grows fourfold up to its limit", "[offset_index]") {
  testing::TempDir dir;
  const std::string path = dir.file("x.index");
  constexpr size_t kPage = IndexFile::kFirstGrowth;
  auto index = OffsetIndex::open(posix_file_system(), path, 0, 5 * kPage);
  REQUIRE(index.ok());
  auto& oi = **index;
  CHECK(std::filesystem::file_size(path) == 0);
  auto append = [&](uint32_t i) { oi.append({RelativeOffset(i), FilePosition(uint64_t{i} * 100)}); };
  append(0);
  CHECK(oi.capacity() == kPage);
  CHECK(std::filesystem::file_size(path) == kPage * IndexFile::kEntrySize);
  for (uint32_t i = 1; i <= kPage; ++i) append(i);
  CHECK(oi.capacity() == 4 * kPage);
  for (uint32_t i = kPage + 1; i < 6 * kPage; ++i) append(i);
  // Capped at its limit, past which it stays sparser; every entry written reads back across growths.
  CHECK(oi.capacity() == 5 * kPage);
  CHECK(oi.count() == 5 * kPage);
  CHECK(std::filesystem::file_size(path) == 5 * kPage * IndexFile::kEntrySize);
  for (uint32_t i : {0u, 1u, static_cast<uint32_t>(kPage), static_cast<uint32_t>(5 * kPage - 1)}) {
    CHECK(oi.at(i).relative == RelativeOffset(i));
    CHECK(oi.at(i).position == FilePosition(uint64_t{i} * 100));
  }
}

TEST_CASE("an index whose growth the disk refuses stays sparser and grows once there is room", "[offset_index]") {
  testing::TempDir dir;
  testing::FaultInjectionFileSystem fs;
  auto index = OffsetIndex::open(fs, dir.file("x.index"), 0, 4 * IndexFile::kFirstGrowth);
  REQUIRE(index.ok());
  auto& oi = **index;
  fs.fail_next_write(ENOSPC);
  oi.append({RelativeOffset(0), FilePosition(0)});
  CHECK(oi.count() == 0);
  CHECK(oi.capacity() == 0);
  oi.append({RelativeOffset(1), FilePosition(100)});
  CHECK(oi.count() == 1);
  CHECK(oi.at(0).relative == RelativeOffset(1));
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
