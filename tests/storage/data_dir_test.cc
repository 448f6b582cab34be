#include "server/storage/data_dir.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <vector>

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

// Passes every call to the real filesystem and records the directory calls, in order.
class DirCallLog final : public FileSystem {
 public:
  std::vector<std::string> calls;

  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override {
    calls.push_back("open " + path);
    return base_.open(path, mode);
  }
  Status remove(const std::string& path) override { return base_.remove(path); }
  Status rename(const std::string& from, const std::string& to) override { return base_.rename(from, to); }
  Status sync_dir(const std::string& dir) override {
    calls.push_back("sync " + dir);
    return base_.sync_dir(dir);
  }
  Status create_dir(const std::string& path) override {
    calls.push_back("mkdir " + path);
    return base_.create_dir(path);
  }
  Status remove_dir(const std::string& path) override { return base_.remove_dir(path); }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override { return base_.list_dir(dir); }
  bool exists(const std::string& path) override { return base_.exists(path); }
  Result<std::unique_ptr<FileLock>> lock(const std::string& path) override {
    calls.push_back("lock " + path);
    return base_.lock(path);
  }

 private:
  FileSystem& base_ = posix_file_system();
};

// Until its parent is synced, a power cut may undo a mkdir, and with it everything made durable inside.
TEST_CASE("every directory the data directory's open creates is synced into its parent before it is used") {
  TempDir scratch;
  DirCallLog fs;
  const std::string path = scratch.file("a/b/data");
  REQUIRE(DataDir::open(fs, path).ok());
  const std::vector<std::string> expected{
      "mkdir " + scratch.file("a"),      "sync " + scratch.path(),       "mkdir " + scratch.file("a/b"),
      "sync " + scratch.file("a"),       "mkdir " + path,                "sync " + scratch.file("a/b"),
      "lock " + path + "/LOCK",          "mkdir " + path + "/streams",   "sync " + path,
  };
  CHECK(fs.calls == expected);
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
