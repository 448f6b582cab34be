#include "tests/support/fault_injection_fs.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

#include "tests/support/temp_dir.h"

namespace streamd::testing {
namespace {

// Reads a whole file through the real filesystem, bypassing the one under test.
std::string contents(const std::string& path) {
  auto file = posix_file_system().open(path, OpenMode::kReadOnly);
  REQUIRE(file.ok());
  auto size = (*file)->size();
  REQUIRE(size.ok());
  std::string out(*size, '\0');
  auto n = (*file)->read_at(FilePosition(0), out.data(), out.size());
  REQUIRE(n.ok());
  out.resize(*n);
  return out;
}

void write_file(FileSystem& fs, const std::string& path, std::string_view data, bool sync) {
  auto file = fs.open(path, OpenMode::kCreate);
  REQUIRE(file.ok());
  REQUIRE((*file)->write_at(FilePosition(0), data).ok());
  if (sync) REQUIRE((*file)->sync().ok());
}

TEST_CASE("drop_unsynced_data keeps what was synced and loses the rest") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  {
    auto file = fs.open(path, OpenMode::kCreateNew);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(0), "hello ").ok());
    REQUIRE((*file)->sync().ok());
    REQUIRE((*file)->write_at(FilePosition(6), "world").ok());
    CHECK(contents(path) == "hello world");
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "hello ");
}

TEST_CASE("a file created and never synced is gone after a crash") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  write_file(fs, dir.file("never.log"), "data", false);
  write_file(fs, dir.file("kept.log"), "data", true);
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK_FALSE(fs.exists(dir.file("never.log")));
  CHECK(contents(dir.file("kept.log")) == "data");
}

TEST_CASE("an overwrite inside synced bytes is undone") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  {
    auto file = fs.open(path, OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(0), std::string(100, 'a')).ok());
    REQUIRE((*file)->sync().ok());
    REQUIRE((*file)->write_at(FilePosition(10), "BBBB").ok());
    REQUIRE((*file)->write_at(FilePosition(95), "CCCCCCCCCC").ok());
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == std::string(100, 'a'));
}

TEST_CASE("an unsynced truncate is undone, a synced one kept") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  {
    auto file = fs.open(path, OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(0), "0123456789").ok());
    REQUIRE((*file)->sync().ok());
    REQUIRE((*file)->truncate(4).ok());
    REQUIRE((*file)->truncate(8).ok());
    CHECK(contents(path) == std::string("0123\0\0\0\0", 8));
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "0123456789");
  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    REQUIRE((*file)->truncate(3).ok());
    REQUIRE((*file)->sync().ok());
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "012");
}

TEST_CASE("a file that existed before is rolled back to its old content") {
  TempDir dir;
  const std::string path = dir.file("old.log");
  write_file(posix_file_system(), path, "original", true);
  write_file(posix_file_system(), dir.file("untouched.log"), "same", true);
  FaultInjectionFileSystem fs;
  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(8), " plus more").ok());
    auto other = fs.open(dir.file("untouched.log"), OpenMode::kReadOnly);
    REQUIRE(other.ok());
  }
  // Written behind the wrapper's back: a file only read through it is not its to roll back.
  write_file(posix_file_system(), dir.file("untouched.log"), "SAME", false);
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "original");
  CHECK(contents(dir.file("untouched.log")) == "SAME");
}

TEST_CASE("every crash rolls back to the last sync") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  write_file(fs, path, "v1", true);
  for (int i = 0; i < 3; ++i) {
    {
      auto file = fs.open(path, OpenMode::kReadWrite);
      REQUIRE(file.ok());
      REQUIRE((*file)->write_at(FilePosition(2), "-lost-" + std::to_string(i)).ok());
    }
    REQUIRE(fs.drop_unsynced_data().ok());
    CHECK(contents(path) == "v1");
  }
}

TEST_CASE("handles of one file share its synced state") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  {
    auto writer = fs.open(path, OpenMode::kCreate);
    REQUIRE(writer.ok());
    auto syncer = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(syncer.ok());
    REQUIRE((*writer)->write_at(FilePosition(0), "abc").ok());
    REQUIRE((*syncer)->sync().ok());
    REQUIRE((*writer)->write_at(FilePosition(3), "def").ok());
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "abc");
}

TEST_CASE("renames and removals are durable at once") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  write_file(fs, dir.file("synced.tmp"), "meta", true);
  REQUIRE(fs.rename(dir.file("synced.tmp"), dir.file("synced")).ok());
  write_file(fs, dir.file("unsynced.tmp"), "meta", false);
  REQUIRE(fs.rename(dir.file("unsynced.tmp"), dir.file("unsynced")).ok());
  write_file(fs, dir.file("removed"), "x", true);
  REQUIRE(fs.remove(dir.file("removed")).ok());
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(dir.file("synced")) == "meta");
  CHECK_FALSE(fs.exists(dir.file("synced.tmp")));
  CHECK_FALSE(fs.exists(dir.file("unsynced")));
  CHECK_FALSE(fs.exists(dir.file("unsynced.tmp")));
  CHECK_FALSE(fs.exists(dir.file("removed")));
}

TEST_CASE("stores through a mapping are lost unless synced") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.index");
  write_file(fs, path, std::string(16, '\0'), true);
  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    auto region = (*file)->map(16);
    REQUIRE(region.ok());
    (*region)->data()[0] = 'x';
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == std::string(16, '\0'));

  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    auto region = (*file)->map(16);
    REQUIRE(region.ok());
    (*region)->data()[1] = 'y';
    REQUIRE((*region)->sync().ok());
    (*region)->data()[2] = 'z';  // after the msync: lost
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == std::string("\0y", 2) + std::string(14, '\0'));

  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    {
      auto region = (*file)->map(16);
      REQUIRE(region.ok());
      (*region)->data()[3] = 'w';
    }
    REQUIRE((*file)->sync().ok());  // fdatasync covers pages stored through an unmapped mapping
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == std::string("\0y\0w", 4) + std::string(12, '\0'));
}

TEST_CASE("fail_next_write fails one write with the chosen errno and writes nothing") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto file = fs.open(dir.file("a.log"), OpenMode::kCreate);
  REQUIRE(file.ok());
  fs.fail_next_write(ENOSPC);
  Status s = (*file)->write_at(FilePosition(0), "abc");
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("errno") == std::to_string(ENOSPC));
  CHECK(s.field("op") == "pwrite");
  CHECK(s.field("path") == dir.file("a.log"));
  CHECK(contents(dir.file("a.log")).empty());
  CHECK(fs.writes() == 0);
  CHECK((*file)->write_at(FilePosition(0), "abc").ok());
  CHECK(contents(dir.file("a.log")) == "abc");
  CHECK(fs.writes() == 1);
}

TEST_CASE("a path filter aims a fault at matching files only") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto index = fs.open(dir.file("0.index"), OpenMode::kCreate);
  auto log = fs.open(dir.file("0.log"), OpenMode::kCreate);
  REQUIRE(index.ok());
  REQUIRE(log.ok());
  fs.fail_next_write(EIO, ".log");
  fs.fail_next_sync(EIO, ".log");
  CHECK((*index)->write_at(FilePosition(0), "i").ok());
  CHECK((*index)->sync().ok());
  CHECK((*log)->write_at(FilePosition(0), "l").field("errno") == std::to_string(EIO));
  CHECK((*log)->sync().field("op") == "fdatasync");
  CHECK((*log)->write_at(FilePosition(0), "l").ok());
  CHECK((*log)->sync().ok());
}

TEST_CASE("a failed sync makes nothing durable") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("a.log");
  {
    auto file = fs.open(path, OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(0), "one").ok());
    REQUIRE((*file)->sync().ok());
    REQUIRE((*file)->write_at(FilePosition(3), "two").ok());
    fs.fail_next_sync(EIO);
    Status s = (*file)->sync();
    CHECK(s.code() == Code::kStreamBackendFailed);
    CHECK(s.field("errno") == std::to_string(EIO));
    CHECK(fs.syncs() == 1);
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "one");

  {
    auto file = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(file.ok());
    auto region = (*file)->map(3);
    REQUIRE(region.ok());
    (*region)->data()[0] = 'O';
    fs.fail_next_sync(ENOSPC);
    CHECK((*region)->sync().field("op") == "msync");
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(path) == "one");
}

TEST_CASE("counters count successful writes and syncs per path") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto log = fs.open(dir.file("0.log"), OpenMode::kCreate);
  auto index = fs.open(dir.file("0.index"), OpenMode::kCreate);
  REQUIRE(log.ok());
  REQUIRE(index.ok());
  for (int i = 0; i < 3; ++i) REQUIRE((*log)->write_at(FilePosition(i), "x").ok());
  REQUIRE((*log)->sync().ok());
  REQUIRE((*log)->sync().ok());
  REQUIRE((*index)->write_at(FilePosition(0), "y").ok());
  REQUIRE((*index)->sync().ok());
  REQUIRE(fs.sync_dir(dir.path()).ok());
  CHECK(fs.writes() == 4);
  CHECK(fs.writes(".log") == 3);
  CHECK(fs.syncs() == 3);
  CHECK(fs.syncs(".log") == 2);
  CHECK(fs.syncs(".index") == 1);
  CHECK(fs.syncs(".timeindex") == 0);
  CHECK(fs.dir_syncs() == 1);
  fs.reset_counters();
  CHECK(fs.writes() == 0);
  CHECK(fs.syncs() == 0);
  CHECK(fs.dir_syncs() == 0);
}

}  // namespace
}  // namespace streamd::testing
