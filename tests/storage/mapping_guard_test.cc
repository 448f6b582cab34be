// Tests of server/storage/mapping_guard.cc and of the indexes' guarded accesses (index_file.cc,
// offset_index.cc, time_index.cc): a mapped page the kernel cannot supply — here the file was cut
// shorter under its mapping, which raises SIGBUS exactly as a page the disk answered EIO for does —
// fails that access and leaves the process running; a SIGBUS outside a guard still ends the process.
#include "server/storage/mapping_guard.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "server/storage/offset_index.h"
#include "server/storage/time_index.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

constexpr size_t kPageBytes = 4096;

// A two-page file mapped shared, then cut to nothing: every page of the mapping now raises SIGBUS.
struct VanishedMapping {
  explicit VanishedMapping(const std::string& path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, 2 * kPageBytes) == 0);
    void* p = ::mmap(nullptr, 2 * kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    data = static_cast<char*>(p);
    std::memset(data, 'x', 2 * kPageBytes);
    REQUIRE(::ftruncate(fd, 0) == 0);
  }
  ~VanishedMapping() {
    ::munmap(data, 2 * kPageBytes);
    ::close(fd);
  }
  int fd = -1;
  char* data = nullptr;
};

TEST_CASE("a guarded access to a vanished page fails and the process goes on", "[mapping_guard]") {
  testing::TempDir dir;
  VanishedMapping m(dir.file("f"));
  char out[16] = {};
  const char* from = m.data + kPageBytes;
  CHECK_FALSE(guard_mapping([&] { std::memcpy(out, from, sizeof out); }));
  CHECK_FALSE(guard_mapping([&] { m.data[0] = 'y'; }));
  // The guard is left as it was entered, again and again: a later fault is caught too, and an access
  // that does not fault passes.
  for (int i = 0; i < 3; ++i) CHECK_FALSE(guard_mapping([&] { std::memcpy(out, from, sizeof out); }));
  int plain = 1;
  CHECK(guard_mapping([&] { plain = 2; }));
  CHECK(plain == 2);
}

TEST_CASE("an inner guard answers for its own fault, and the outer one completes", "[mapping_guard]") {
  testing::TempDir dir;
  VanishedMapping m(dir.file("f"));
  bool inner = true;
  int after = 0;
  CHECK(guard_mapping([&] {
    inner = guard_mapping([&] { static_cast<void>(*static_cast<volatile char*>(m.data)); });
    after = 1;
  }));
  CHECK_FALSE(inner);
  CHECK(after == 1);
}

TEST_CASE("a SIGBUS outside any guard still ends the process", "[mapping_guard]") {
  testing::TempDir dir;
  VanishedMapping m(dir.file("f"));
  CHECK_FALSE(guard_mapping([&] { static_cast<void>(*static_cast<volatile char*>(m.data)); }));  // installed
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    static_cast<void>(*static_cast<volatile char*>(m.data));
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  // Ended by the signal, or by the handler installed before the guard's (a sanitizer's report exits
  // non-zero); never carried on past the access.
  CHECK((WIFSIGNALED(status) ? WTERMSIG(status) == SIGBUS : WEXITSTATUS(status) != 0));
}

TEST_CASE("indexes whose file was cut under their mapping fail lookups instead of the process",
          "[mapping_guard][offset_index][time_index]") {
  testing::TempDir dir;
  auto oi = OffsetIndex::open(posix_file_system(), dir.file("x.index"), 1024);
  auto ti = TimeIndex::open(posix_file_system(), dir.file("x.timeindex"), 1024);
  REQUIRE(oi.ok());
  REQUIRE(ti.ok());
  for (uint32_t i = 0; i < 600; ++i) {
    (*oi)->append({RelativeOffset(i * 10), FilePosition(i * 4096ull)});
    (*ti)->maybe_append({Timestamp(1000 + i), RelativeOffset(i * 10)});
  }
  REQUIRE((*oi)->floor(RelativeOffset(5995))->relative == RelativeOffset(5990));
  REQUIRE((*ti)->last_before(Timestamp(1300))->relative == RelativeOffset(2990));
  CHECK((*oi)->readable());

  for (const char* name : {"x.index", "x.timeindex"}) REQUIRE(::truncate(dir.file(name).c_str(), 0) == 0);
  CHECK_FALSE((*oi)->readable());
  CHECK_FALSE((*ti)->readable());
  CHECK_FALSE((*oi)->floor(RelativeOffset(5995)).has_value());
  CHECK_FALSE((*oi)->last().has_value());
  CHECK_FALSE((*ti)->last_before(Timestamp(1300)).has_value());
  CHECK_FALSE((*ti)->first().has_value());
  CHECK_FALSE((*ti)->last().has_value());
  // An entry that cannot be stored is not counted: the index stays sparser.
  (*oi)->append({RelativeOffset(7000), FilePosition(700 * 4096ull)});
  CHECK((*oi)->count() == 600);
  (*ti)->maybe_append({Timestamp(5000), RelativeOffset(7000)});
  CHECK((*ti)->count() == 600);
}

}  // namespace
}  // namespace streamd
