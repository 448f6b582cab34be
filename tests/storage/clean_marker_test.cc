// Tests of the clean marker's life (server/storage/partition_log.h): it vouches for the files from a
// clean close until their first change, so a partition only read since a clean open closes without
// touching the disk and a crash costs its next open no scan; every writer of the files removes it first.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include "server/storage/partition_log.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::make_batch;
using testing::read_all;

struct MarkerFixture {
  testing::TempDir dir;
  testing::FaultInjectionFileSystem fs;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<PartitionLog> log;

  MarkerFixture() { reopen(); }
  std::string marker() { return dir.file("p0/clean"); }
  void reopen() {
    log.reset();
    auto opened = PartitionLog::open(fs, dir.file("p0"), testing::small_partition_options(2048), pool, clock);
    REQUIRE(opened.ok());
    log = std::move(*opened);
  }
  void append(uint32_t records) {
    REQUIRE(append_and_wait(*log, make_batch(log->bounds().next.value, records)).ok());
  }
  // A partition of three segments, closed cleanly and opened again.
  void written_and_reopened_clean() {
    for (int i = 0; i < 40; ++i) append(5);
    REQUIRE(log->segments().size() >= 3);
    REQUIRE(log->segments().back().bytes > 0);  // so a roll has something to close
    log->close();
    reopen();
    REQUIRE(log->marked_clean());
  }
};

TEST_CASE("a new partition starts marked clean, closes without touching a file, and loses the marker to "
          "its first append", "[clean_marker]") {
  MarkerFixture f;
  CHECK(f.log->marked_clean());
  CHECK(std::filesystem::exists(f.marker()));
  f.fs.reset_counters();
  f.log->close();
  CHECK(f.fs.writes() == 0);
  CHECK(f.fs.syncs() == 0);
  CHECK(f.fs.dir_syncs() == 0);
  f.reopen();
  CHECK(f.log->marked_clean());
  f.append(2);
  CHECK_FALSE(std::filesystem::exists(f.marker()));
  f.log->close();
  f.reopen();
  CHECK(f.log->bounds() == Bounds{Offset(0), Offset(2)});
}

TEST_CASE("a clean open keeps the marker, and a close of the unchanged partition touches no file",
          "[clean_marker]") {
  MarkerFixture f;
  f.written_and_reopened_clean();
  const Bounds bounds = f.log->bounds();
  CHECK(read_all(*f.log, bounds.first).size() == 200);
  CHECK(f.log->peek().ok());
  f.fs.reset_counters();
  f.log->close();
  CHECK(f.fs.writes() == 0);
  CHECK(f.fs.syncs() == 0);
  CHECK(f.fs.dir_syncs() == 0);
  CHECK(std::filesystem::exists(f.marker()));
  f.reopen();
  CHECK(f.log->bounds() == bounds);
  CHECK(read_all(*f.log, bounds.first).size() == 200);
}

TEST_CASE("a crash of a partition only read since its clean open leaves the marker vouching for it",
          "[clean_marker]") {
  MarkerFixture f;
  f.written_and_reopened_clean();
  const Bounds bounds = f.log->bounds();
  CHECK(read_all(*f.log, bounds.first).size() == 200);
  f.log->close(PartitionLog::CloseMode::kAsIs);
  f.log.reset();
  REQUIRE(f.fs.drop_unsynced_data().ok());
  CHECK(std::filesystem::exists(f.marker()));
  f.reopen();
  CHECK(f.log->marked_clean());
  CHECK(f.log->bounds() == bounds);
  f.append(3);
  CHECK(read_all(*f.log, bounds.first).size() == 203);
}

TEST_CASE("every change to the files removes the marker, durably, before it is made", "[clean_marker]") {
  using Change = std::function<void(MarkerFixture&)>;
  const std::pair<const char*, Change> changes[] = {
      {"an append", [](MarkerFixture& f) { f.append(1); }},
      {"a trim", [](MarkerFixture& f) { REQUIRE(f.log->trim(Offset(7)).ok()); }},
      {"a retention drop",
       [](MarkerFixture& f) { REQUIRE(f.log->drop_front_segments([](const SegmentInfo&) { return true; }).ok()); }},
      {"a roll of the active segment",
       [](MarkerFixture& f) { REQUIRE(f.log->roll_active_if([](const SegmentInfo&) { return true; }).ok()); }},
  };
  for (const auto& [name, change] : changes) {
    DYNAMIC_SECTION(name) {
      MarkerFixture f;
      f.written_and_reopened_clean();
      f.fs.reset_counters();
      change(f);
      CHECK_FALSE(f.log->marked_clean());
      CHECK_FALSE(std::filesystem::exists(f.marker()));
      CHECK(f.fs.dir_syncs() >= 1);
      // A crash now: the next open must not trust the files.
      const Bounds bounds = f.log->bounds();
      f.log->close(PartitionLog::CloseMode::kAsIs);
      f.log.reset();
      REQUIRE(f.fs.drop_unsynced_data().ok());
      f.reopen();
      CHECK_FALSE(f.log->marked_clean());
      CHECK(f.log->bounds() == bounds);
    }
  }
}

TEST_CASE("a decision that changes nothing keeps the marker", "[clean_marker]") {
  MarkerFixture f;
  f.written_and_reopened_clean();
  REQUIRE(f.log->trim(f.log->bounds().first).ok());
  REQUIRE(f.log->drop_front_segments([](const SegmentInfo&) { return false; }).ok());
  REQUIRE(f.log->roll_active_if([](const SegmentInfo&) { return false; }).ok());
  CHECK(f.log->marked_clean());
  CHECK(std::filesystem::exists(f.marker()));
}

TEST_CASE("an open that must repair the files removes the marker", "[clean_marker]") {
  MarkerFixture f;
  f.written_and_reopened_clean();
  f.log->close();
  f.log.reset();
  // A compaction's output that was never swapped in is removed on open: a change.
  testing::write_file(f.dir.file("p0/00000000000000000000.log.swap"), "leftover");
  f.reopen();
  CHECK_FALSE(f.log->marked_clean());
  CHECK_FALSE(std::filesystem::exists(f.marker()));
  CHECK_FALSE(std::filesystem::exists(f.dir.file("p0/00000000000000000000.log.swap")));
}

TEST_CASE("the clean marker holds the summary a closed partition answers, and only a whole one counts",
          "[clean_marker]") {
  MarkerFixture f;
  for (int i = 0; i < 40; ++i) f.append(5);
  const PartitionSummary expected{f.log->bounds(), f.log->size_bytes(), f.log->segments(), {}};
  f.log->close();
  auto summary = PartitionLog::clean_summary(f.fs, f.dir.file("p0"));
  REQUIRE(summary.has_value());
  CHECK(summary->bounds == expected.bounds);
  CHECK(summary->size_bytes == expected.size_bytes);
  REQUIRE(summary->segments.size() == expected.segments.size());
  for (size_t i = 0; i < expected.segments.size(); ++i) {
    CHECK(summary->segments[i].base == expected.segments[i].base);
    CHECK(summary->segments[i].end == expected.segments[i].end);
    CHECK(summary->segments[i].bytes == expected.segments[i].bytes);
    CHECK(summary->segments[i].min_appended_at == expected.segments[i].min_appended_at);
    CHECK(summary->segments[i].max_appended_at == expected.segments[i].max_appended_at);
    CHECK(summary->segments[i].active == expected.segments[i].active);
  }
  const std::string marker = testing::read_file(f.marker());
  for (size_t at : {size_t{0}, size_t{9}, marker.size() - 1}) {
    testing::write_file(f.marker(), marker);
    testing::flip_byte(f.marker(), at);
    CHECK_FALSE(PartitionLog::clean_summary(f.fs, f.dir.file("p0")).has_value());
  }
  testing::write_file(f.marker(), marker.substr(0, marker.size() - 3));
  CHECK_FALSE(PartitionLog::clean_summary(f.fs, f.dir.file("p0")).has_value());
  testing::write_file(f.marker(), "");
  CHECK_FALSE(PartitionLog::clean_summary(f.fs, f.dir.file("p0")).has_value());
  // A marker without a whole summary vouches for nothing (a new partition's marker is written unsynced,
  // and a crash may keep its name without its bytes): the open scans the files, and finds them whole.
  f.reopen();
  CHECK_FALSE(f.log->marked_clean());
  CHECK(f.log->bounds() == expected.bounds);
}

}  // namespace
}  // namespace streamd
