// Tests of server/storage/time_index.cc.
#include "server/storage/time_index.h"

#include <catch2/catch.hpp>

#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

TEST_CASE("entries are added only when the instant grows", "[time_index]") {
  testing::TempDir dir;
  auto index = TimeIndex::open(posix_file_system(), dir.file("x.timeindex"), 8);
  REQUIRE(index.ok());
  auto& ti = **index;
  ti.maybe_append({Timestamp(100), RelativeOffset(0)});
  ti.maybe_append({Timestamp(100), RelativeOffset(4)});
  ti.maybe_append({Timestamp(90), RelativeOffset(6)});
  ti.maybe_append({Timestamp(150), RelativeOffset(8)});
  REQUIRE(ti.count() == 2);
  CHECK(ti.at(1) == TimeIndexEntry{Timestamp(150), RelativeOffset(8)});
  CHECK(ti.last()->time == Timestamp(150));
}

TEST_CASE("last_before finds the newest entry strictly older than an instant", "[time_index]") {
  testing::TempDir dir;
  auto index = TimeIndex::open(posix_file_system(), dir.file("x.timeindex"), 8);
  REQUIRE(index.ok());
  auto& ti = **index;
  CHECK_FALSE(ti.last_before(Timestamp(5)).has_value());
  ti.maybe_append({Timestamp(10), RelativeOffset(0)});
  ti.maybe_append({Timestamp(20), RelativeOffset(5)});
  ti.maybe_append({Timestamp(30), RelativeOffset(9)});
  CHECK_FALSE(ti.last_before(Timestamp(10)).has_value());
  CHECK(ti.last_before(Timestamp(11))->relative == RelativeOffset(0));
  CHECK(ti.last_before(Timestamp(20))->relative == RelativeOffset(0));
  CHECK(ti.last_before(Timestamp(31))->relative == RelativeOffset(9));
}

TEST_CASE("valid_prefix rejects zero instants, regressions and entries past the segment", "[time_index]") {
  testing::TempDir dir;
  const std::string path = dir.file("x.timeindex");
  {
    auto index = TimeIndex::open(posix_file_system(), path, 4);
    REQUIRE(index.ok());
    (*index)->maybe_append({Timestamp(10), RelativeOffset(0)});
    (*index)->maybe_append({Timestamp(20), RelativeOffset(5)});
  }
  auto index = TimeIndex::open(posix_file_system(), path, 4);
  REQUIRE(index.ok());
  bool clean = false;
  CHECK((*index)->valid_prefix(100, clean) == 2);
  CHECK(clean);
  CHECK((*index)->valid_prefix(5, clean) == 1);
  CHECK_FALSE(clean);
}

}  // namespace
}  // namespace streamd
