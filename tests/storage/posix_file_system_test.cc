// Tests of server/storage/posix_file_system.cc beyond what every storage test exercises: gathered
// writes.
#include <catch2/catch.hpp>

#include <climits>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/file_system.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

TEST_CASE("write_vectored lays pieces end to end, empty ones and more than IOV_MAX included", "[posix_fs]") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/f";
  auto file = posix_file_system().open(path, OpenMode::kCreateNew);
  REQUIRE(file.ok());
  std::vector<std::string> owned;
  std::string expected;
  for (int i = 0; i < IOV_MAX * 2 + 7; ++i) {
    owned.push_back(i % 5 == 0 ? std::string() : std::string(static_cast<size_t>(i % 13), static_cast<char>('a' + i % 26)));
    expected += owned.back();
  }
  std::vector<std::string_view> pieces(owned.begin(), owned.end());
  REQUIRE((*file)->write_at(FilePosition(0), "head").ok());
  REQUIRE((*file)->write_vectored(FilePosition(4), pieces).ok());
  (*file)->start_writeback(FilePosition(0), 4 + expected.size());
  REQUIRE((*file)->sync().ok());
  CHECK(testing::read_file(path) == "head" + expected);
}

}  // namespace
}  // namespace streamd
