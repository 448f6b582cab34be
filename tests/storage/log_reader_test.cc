// Tests of server/storage/log_reader.cc: walks of a file in chunks, reused or kept, batches larger
// than a chunk, and where each walk stops.
#include "server/storage/log_reader.h"

#include <catch2/catch.hpp>

#include "server/storage/batch_builder.h"
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
}

TEST_CASE("a kept walk's batches stay valid after later chunks are read, while their chunk is held", "[log_reader]") {
  testing::TempDir dir;
  const std::string log = three_large_batches();
  const std::string path = dir.path() + "/log";
  testing::write_file(path, log);
  auto file = posix_file_system().open(path, OpenMode::kReadOnly);
  REQUIRE(file.ok());
  LogReader reader(**file, FilePosition(0), log.size(), 4096, ChunkBuffers::kKept);
  std::vector<std::shared_ptr<const char[]>> held;
  std::vector<std::string_view> batches;
  LogBatch b;
  while (reader.next(b)) {
    held.push_back(reader.chunk());
    batches.push_back(b.bytes);
  }
  CHECK(reader.stop() == BatchCheck::kOk);
  REQUIRE(batches.size() == 3);
  CHECK(held[0] != held[1]);
  for (size_t i = 0; i < 3; ++i) CHECK(batches[i] == std::string_view(log).substr(i * log.size() / 3, log.size() / 3));
}

// Walks `log` from a file in 4 KiB chunks, reused and kept: both must find only the first batch and
// stop with `expected` at the second batch's position.
void check_both_stop_at_second(const std::string& log, size_t second, BatchCheck expected) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/log";
  testing::write_file(path, log);
  auto file = posix_file_system().open(path, OpenMode::kReadOnly);
  REQUIRE(file.ok());
  LogReader reused(**file, FilePosition(0), log.size(), 4096);
  LogReader kept(**file, FilePosition(0), log.size(), 4096, ChunkBuffers::kKept);
  for (LogReader* reader : {&reused, &kept}) {
    CHECK(bases(*reader) == std::vector<uint64_t>{0});
    CHECK(reader->stop() == expected);
    CHECK(reader->stop_position() == FilePosition(second));
  }
}

TEST_CASE("both walks stop at zero-filled space and at a torn batch, at its position", "[log_reader]") {
  const std::string log = three_large_batches();
  const size_t second = log.size() / 3;
  SECTION("zeros after the first batch") {
    check_both_stop_at_second(log.substr(0, second) + std::string(8192, '\0'), second, BatchCheck::kZeroFilled);
  }
  SECTION("the second batch cut short") {
    check_both_stop_at_second(log.substr(0, second + 5000), second, BatchCheck::kTruncated);
  }
  SECTION("the file ends at the second batch, before the limit") {
    testing::TempDir dir;
    const std::string path = dir.path() + "/log";
    testing::write_file(path, log.substr(0, second));
    auto file = posix_file_system().open(path, OpenMode::kReadOnly);
    REQUIRE(file.ok());
    LogReader reader(**file, FilePosition(0), log.size(), 4096, ChunkBuffers::kKept);
    CHECK(bases(reader) == std::vector<uint64_t>{0});
    CHECK(reader.stop() == BatchCheck::kTruncated);
    CHECK(reader.stop_position() == FilePosition(second));
    CHECK(reader.io_status().ok());
  }
}

}  // namespace
}  // namespace streamd
