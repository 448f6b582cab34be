#include "server/storage/data_dir.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::TempDir;

void check_unusable(const Result<std::unique_ptr<DataDir>>& r, const std::string& path, const std::string& reason) {
  INFO(r.status().to_string());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kStreamDirectoryUnusable);
  CHECK(r.status().field("path") == path);
  CHECK(r.status().field("reason") == reason);
}

TEST_CASE("a missing data directory is created with its parents, private to its owner") {
  TempDir scratch;
  std::string path = scratch.file("a/b/data");
  auto dir = DataDir::open(posix_file_system(), path);
  REQUIRE(dir.ok());
  CHECK((*dir)->path() == path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(posix_file_system().exists((*dir)->streams_dir()));
  CHECK(posix_file_system().exists(path + "/LOCK"));
}

TEST_CASE("a trailing slash names the same directory") {
  TempDir scratch;
  auto dir = DataDir::open(posix_file_system(), scratch.path() + "/");
  REQUIRE(dir.ok());
  CHECK((*dir)->path() == scratch.path());
}

TEST_CASE("a data directory is refused while another broker holds its lock, and usable once released") {
  TempDir scratch;
  auto first = DataDir::open(posix_file_system(), scratch.path());
  REQUIRE(first.ok());
  check_unusable(DataDir::open(posix_file_system(), scratch.path()), scratch.path(), "locked by another broker");
  first->reset();
  CHECK(DataDir::open(posix_file_system(), scratch.path()).ok());
}

TEST_CASE("a path that is a file is refused as not a directory") {
  TempDir scratch;
  std::string path = scratch.file("file");
  std::ofstream(path) << "x";
  check_unusable(DataDir::open(posix_file_system(), path), path, "not a directory");
}

TEST_CASE("a path that cannot be created is refused with the reason") {
  TempDir scratch;
  std::ofstream(scratch.file("file")) << "x";
  std::string path = scratch.file("file/data");
  auto r = DataDir::open(posix_file_system(), path);
  check_unusable(r, path, "cannot be created: Not a directory");
  CHECK(r.status().field("errno") == std::to_string(ENOTDIR));
}

TEST_CASE("a directory writable by group or others is refused") {
  TempDir scratch;
  auto mode = GENERATE(0770, 0702, 0777, 0720);
  std::string path = scratch.file("data");
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  REQUIRE(::chmod(path.c_str(), static_cast<mode_t>(mode)) == 0);
  auto r = DataDir::open(posix_file_system(), path);
  check_unusable(r, path, "writable by group or others");
  char expected[8];
  std::snprintf(expected, sizeof expected, "%04o", mode);
  CHECK(r.status().field("mode") == expected);
}

TEST_CASE("a directory readable but not writable by group or others is accepted") {
  TempDir scratch;
  std::string path = scratch.file("data");
  REQUIRE(::mkdir(path.c_str(), 0755) == 0);
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  CHECK(DataDir::open(posix_file_system(), path).ok());
}

TEST_CASE("an empty path is refused") {
  check_unusable(DataDir::open(posix_file_system(), ""), "", "no path given");
}

}  // namespace
}  // namespace streamd
