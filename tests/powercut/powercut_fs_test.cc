// tests/powercut/powercut_fs.cc through the real kernel: POSIX calls and mappings on the mount, a cut,
// the remount, and faults as a program sees them. Skipped, saying why, where FUSE cannot be mounted.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/powercut/mounted.h"

namespace streamd::powercut {
namespace {

int open_or_fail(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
  INFO(path << ": " << std::strerror(errno));
  REQUIRE(fd >= 0);
  return fd;
}

void write_all(int fd, const std::string& data, off_t at) {
  REQUIRE(::pwrite(fd, data.data(), data.size(), at) == static_cast<ssize_t>(data.size()));
}

void sync_dir(const std::string& dir) {
  int fd = open_or_fail(dir, O_RDONLY | O_DIRECTORY);
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("through the kernel: synced data and names survive a cut, unsynced ones do not", "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  REQUIRE(::mkdir(m.path("d").c_str(), 0700) == 0);
  sync_dir(m.mnt);
  int fd = open_or_fail(m.path("d/kept"), O_RDWR | O_CREAT | O_EXCL);
  write_all(fd, "durable", 0);
  REQUIRE(::fdatasync(fd) == 0);
  sync_dir(m.path("d"));
  write_all(fd, "-lost", 7);
  ::close(fd);
  fd = open_or_fail(m.path("d/unnamed"), O_RDWR | O_CREAT | O_EXCL);
  write_all(fd, "synced, but its name is not", 0);
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
  CHECK(slurp(m.path("d/kept")) == "durable-lost");

  m.cut_and_restore();
  CHECK(slurp(m.path("d/kept")) == "durable");
  CHECK_FALSE(std::filesystem::exists(m.path("d/unnamed")));
  struct stat st {};
  REQUIRE(::stat(m.path("d").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("through the kernel: stores into a shared mapping are durable after msync only", "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  int fd = open_or_fail(m.path("index"), O_RDWR | O_CREAT | O_EXCL);
  REQUIRE(::ftruncate(fd, 8192) == 0);
  REQUIRE(::fsync(fd) == 0);
  sync_dir(m.mnt);
  char* p = static_cast<char*>(::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  REQUIRE(p != MAP_FAILED);
  std::memcpy(p, "first", 5);
  REQUIRE(::msync(p, 8192, MS_SYNC) == 0);
  std::memcpy(p + 4096, "second", 6);  // never synced
  ::munmap(p, 8192);
  ::close(fd);

  m.cut_and_restore();
  std::string got = slurp(m.path("index"));
  REQUIRE(got.size() == 8192);
  CHECK(got.substr(0, 5) == "first");
  CHECK(got.substr(4096, 6) == std::string(6, '\0'));
}

TEST_CASE("through the kernel: written back, a mapping's stores are unsynced writes a cut may keep or lose",
          "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  int fd = open_or_fail(m.path("index"), O_RDWR | O_CREAT | O_EXCL);
  REQUIRE(::ftruncate(fd, 8192) == 0);
  REQUIRE(::fsync(fd) == 0);
  sync_dir(m.mnt);
  char* p = static_cast<char*>(::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  REQUIRE(p != MAP_FAILED);
  std::memcpy(p + 4096, "stored", 6);
  m.fs->write_back();
  ::munmap(p, 8192);
  ::close(fd);

  // The store reached the filesystem (a torn cut counts its page among the unsynced ones) but is not
  // durable: a cut that keeps no unsynced page loses it.
  const CutReport report = m.fs->cut(CutMode::kTorn, 7);
  CHECK(report.unsynced.count("index") == 1);
  CHECK(report.pages_unsynced == 1);
  std::string error;
  REQUIRE(m.fs->restore(&error));
  fd = open_or_fail(m.path("index"), O_RDWR);
  p = static_cast<char*>(::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  REQUIRE(p != MAP_FAILED);
  std::memcpy(p + 4096, "stored", 6);
  m.fs->write_back();
  ::munmap(p, 8192);
  ::close(fd);
  m.cut_and_restore(CutMode::kDiscard);
  CHECK(slurp(m.path("index")).substr(4096, 6) == std::string(6, '\0'));
}

TEST_CASE("through the kernel: sync_file_range makes nothing durable", "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  int fd = open_or_fail(m.path("seg.log"), O_RDWR | O_CREAT | O_EXCL);
  write_all(fd, "synced", 0);
  REQUIRE(::fdatasync(fd) == 0);
  sync_dir(m.mnt);
  write_all(fd, std::string(8192, 'w'), 6);
  REQUIRE(::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                           SYNC_FILE_RANGE_WAIT_AFTER) == 0);
  ::close(fd);
  m.cut_and_restore(CutMode::kDiscard);
  CHECK(slurp(m.path("seg.log")) == "synced");
}

TEST_CASE("through the kernel: an injected EIO fails that fsync and that read only", "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  int fd = open_or_fail(m.path("seg.log"), O_RDWR | O_CREAT | O_EXCL);
  write_all(fd, std::string(3 * 4096, 'x'), 0);
  REQUIRE(::fsync(fd) == 0);
  m.fs->add_fault({FaultOp::kFsync, EIO, "seg.log", 1});
  write_all(fd, "y", 0);
  CHECK(::fdatasync(fd) == -1);
  CHECK(errno == EIO);
  CHECK(::fdatasync(fd) == 0);

  char buf[16];
  REQUIRE(::pread(fd, buf, sizeof buf, 4096) == static_cast<ssize_t>(sizeof buf));  // now in the page cache
  // Until cleared: the kernel retries a failed readahead with a read of its own.
  m.fs->add_fault({FaultOp::kRead, EIO, "seg.log", -1});
  CHECK(::pread(fd, buf, sizeof buf, 4096) == -1);
  CHECK(errno == EIO);
  m.fs->clear_faults();
  CHECK(::pread(fd, buf, sizeof buf, 4096) == static_cast<ssize_t>(sizeof buf));
  ::close(fd);
}

TEST_CASE("through the kernel: a mapped page whose read fails raises SIGBUS in the program touching it",
          "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  int fd = open_or_fail(m.path("seg.log"), O_RDWR | O_CREAT | O_EXCL);
  write_all(fd, std::string(2 * 4096, 'x'), 0);
  REQUIRE(::fsync(fd) == 0);
  m.fs->add_fault({FaultOp::kRead, EIO, "seg.log", -1});
  // In a child, which the signal kills: this is what the failing disk does to a reader of a mapping.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto* p = static_cast<volatile const char*>(::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED) ::_exit(2);
    char c = p[4096];
    ::_exit(c == 'x' ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);
  m.fs->clear_faults();
  ::close(fd);
}

TEST_CASE("through the kernel: a torn cut after many cycles still mounts and lists", "[powercut][fuse]") {
  Mounted m;
  if (!m.start()) return;
  for (uint64_t cycle = 0; cycle < 5; ++cycle) {
    const std::string name = "f" + std::to_string(cycle);
    int fd = open_or_fail(m.path(name), O_RDWR | O_CREAT | O_EXCL);
    write_all(fd, std::string(10000, static_cast<char>('a' + cycle)), 0);
    REQUIRE(::fsync(fd) == 0);
    sync_dir(m.mnt);
    write_all(fd, std::string(10000, 'z'), 5000);
    ::close(fd);
    m.cut_and_restore(CutMode::kTorn, cycle);
    std::string got = slurp(m.path(name));
    REQUIRE((got.size() == 10000 || got.size() == 15000));
    CHECK(got.substr(0, 4096) == std::string(4096, static_cast<char>('a' + cycle)));  // never rewritten
  }
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(m.mnt)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 5);
}

}  // namespace
}  // namespace streamd::powercut
