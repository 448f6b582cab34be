// Tests of server/storage/log_reader.cc: the same walk from a file in chunks and from memory, batches
// larger than a chunk, and where each walk stops.
#include "server/storage/log_reader.h"

#include <catch2/catch.hpp>

#include "tests/storage/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

// Three sealed batches of 1000 records of 100 bytes (about 103 KB each), back to back.
std::string three_large_batches() {
  std::string log;
  for (uint64_t base = 0; base < 3000; base += 1000) {
    BatchBuilder b;
    for (int i = 0; i < 1000; ++i) b.add("", std::string(100, static_cast<char>('a' + base / 1000)));
    std::string batch = std::move(b).finish();
    seal_batch(batch, Offset(base), Timestamp(7));
    log += batch;
  }
  return log;
}

std::vector<uint64_t> bases(LogReader& reader) {
  std::vector<uint64_t> out;
  LogBatch b;
  while (reader.next(b)) out.push_back(b.header.base_offset.value);
  return out;
}

TEST_CASE("a file walked in chunks smaller than its batches yields every batch", "[log_reader]") {
  testing::TempDir dir;
  const std::string log = three_large_batches();
  const std::string path = dir.path() + "/log";
  testing::write_file(path, log);
  auto file = posix_file_system().open(path, OpenMode::kReadOnly);
  REQUIRE(file.ok());
  LogReader from_file(**file, FilePosition(0), log.size(), 4096);
  CHECK(bases(from_file) == std::vector<uint64_t>{0, 1000, 2000});
  CHECK(from_file.stop() == BatchCheck::kOk);
  CHECK(from_file.io_status().ok());

  LogReader from_memory(log, FilePosition(0));
  CHECK(bases(from_memory) == std::vector<uint64_t>{0, 1000, 2000});
  CHECK(from_memory.stop() == BatchCheck::kOk);
}

TEST_CASE("both walks stop at zero-filled space and at a torn batch, at its position", "[log_reader]") {
  testing::TempDir dir;
  const std::string log = three_large_batches();
  const size_t second = log.size() / 3;
  const std::string path = dir.path() + "/log";

  SECTION("zeros after the first batch") {
    std::string zeroed = log.substr(0, second) + std::string(8192, '\0');
    testing::write_file(path, zeroed);
    auto file = posix_file_system().open(path, OpenMode::kReadOnly);
    REQUIRE(file.ok());
    LogReader from_file(**file, FilePosition(0), zeroed.size(), 4096);
    CHECK(bases(from_file) == std::vector<uint64_t>{0});
    CHECK(from_file.stop() == BatchCheck::kZeroFilled);
    CHECK(from_file.stop_position() == FilePosition(second));
    LogReader from_memory(zeroed, FilePosition(0));
    CHECK(bases(from_memory) == std::vector<uint64_t>{0});
    CHECK(from_memory.stop() == BatchCheck::kZeroFilled);
  }
  SECTION("the second batch cut short") {
    std::string torn = log.substr(0, second + 5000);
    testing::write_file(path, torn);
    auto file = posix_file_system().open(path, OpenMode::kReadOnly);
    REQUIRE(file.ok());
    LogReader from_file(**file, FilePosition(0), torn.size(), 4096);
    CHECK(bases(from_file) == std::vector<uint64_t>{0});
    CHECK(from_file.stop() == BatchCheck::kTruncated);
    CHECK(from_file.stop_position() == FilePosition(second));
    LogReader from_memory(torn, FilePosition(0));
    CHECK(bases(from_memory) == std::vector<uint64_t>{0});
    CHECK(from_memory.stop() == BatchCheck::kTruncated);
    CHECK(from_memory.stop_position() == FilePosition(second));
  }
}

}  // namespace
}  // namespace streamd
