// Recovery and fault injection for server/storage/partition_log.cc and segment.cc: torn tails cut at
// every byte, damage in the middle, stale and missing indexes, failed syncs, and lost unsynced data.
#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>

#include "server/storage/clock.h"
#include "server/storage/coding.h"
#include "server/storage/partition_log.h"
#include "server/storage/segment.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::make_batch;
using testing::payload_for;
using testing::read_all;
using testing::read_file;
using testing::write_file;

struct Recovery {
  testing::TempDir dir;
  ThreadPool pool{1};
  ManualClock clock;
  PartitionOptions options = testing::small_partition_options(1 << 20);
  std::string part = dir.file("p0");

  std::unique_ptr<PartitionLog> open(FileSystem& fs = posix_file_system()) {
    auto log = PartitionLog::open(fs, part, options, pool, clock);
    REQUIRE(log.ok());
    return std::move(*log);
  }
  // Writes batches of 3 records and returns each batch's end position in the active segment.
  std::vector<uint64_t> write(PartitionLog& log, int batches) {
    std::vector<uint64_t> ends;
    for (int i = 0; i < batches; ++i) {
      uint64_t first = log.bounds().next.value;
      REQUIRE(append_and_wait(log, make_batch(first, 3)).ok());
      ends.push_back(log.size_bytes());
    }
    return ends;
  }
  std::string log_file(uint64_t base = 0) const { return part + "/" + Segment::file_stem(Offset(base)) + ".log"; }
  void check_records(PartitionLog& log, uint64_t count) {
    auto all = read_all(log, log.bounds().first);
    REQUIRE(all.size() == count);
    for (uint64_t i = 0; i < count; ++i) {
      REQUIRE(all[i].first == i);
      REQUIRE(all[i].second == payload_for(i));
    }
  }
};

TEST_CASE("a log cut at every byte of its last batch keeps the batches before it", "[recovery]") {
  Recovery r;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 6);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  const std::string original = read_file(r.log_file());
  for (uint64_t cut = ends[4]; cut < ends[5]; ++cut) {
    INFO("cut at byte " << cut);
    write_file(r.log_file(), original.substr(0, cut));
    auto log = r.open();
    REQUIRE(log->bounds() == Bounds{Offset(0), Offset(15)});
    r.check_records(*log, 15);
    // The next append takes the offset the torn batch had.
    auto next = append_and_wait(*log, make_batch(15, 3));
    REQUIRE(next.ok());
    CHECK(next->first == Offset(15));
    r.check_records(*log, 18);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
}

TEST_CASE("a torn batch inside zero-filled space is cut off", "[recovery]") {
  Recovery r;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 4);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  // Half of the last batch reached the disk; the rest of its space is still the preallocated zeros.
  std::string bytes = read_file(r.log_file());
  REQUIRE(bytes.size() > ends[3]);
  std::fill(bytes.begin() + static_cast<long>((ends[2] + ends[3]) / 2), bytes.begin() + static_cast<long>(ends[3]), '\0');
  write_file(r.log_file(), bytes);
  auto log = r.open();
  CHECK(log->bounds().next == Offset(9));
  r.check_records(*log, 9);
}

TEST_CASE("damage in the middle keeps what precedes it and is reported as corruption", "[recovery]") {
  Recovery r;
  // One index entry for the whole segment: recovery scans all of it from there.
  r.options.index_interval_bytes = 1 << 20;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 8);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  testing::flip_byte(r.log_file(), ends[2] + 40);  // inside batch 3 (offsets 9..11)
  {
 SegmentRecovery rec;
    const SegmentOptions options{r.options.segment_bytes, r.options.index_interval_bytes, r.options.preallocate_bytes};
    auto seg = Segment::open(posix_file_system(), r.part, Offset(0), options, SegmentRole::kActive, PriorClose::kUnknown,
                             rec);
    REQUIRE(seg.ok());
    CHECK(rec.truncated);
    CHECK(rec.corruption);
    CHECK(rec.truncated_at == ends[2]);
    CHECK((*seg)->written_end() == Offset(9));
  }
  auto log = r.open();
  CHECK(log->bounds().next == Offset(9));
  r.check_records(*log, 9);
  auto next = append_and_wait(*log, make_batch(9, 3));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(9));
}

TEST_CASE("missing or damaged index files are rebuilt identically", "[recovery]") {
  Recovery r;
  r.options = testing::small_partition_options(4096);
  {
    auto log = r.open();
    r.write(*log, 200);
    REQUIRE(log->segments().size() > 3);
    log->close();
  }
  // Closed segments' index files, as the writer left them.
  std::map<std::string, std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(r.part)) {
    auto name = e.path().filename().string();
    if (name.ends_with(".index") || name.ends_with(".timeindex")) before[name] = read_file(e.path().string());
  }
  auto closed_index = Segment::file_stem(Offset(0)) + ".index";
  auto closed_time = Segment::file_stem(Offset(0)) + ".timeindex";
  REQUIRE(before[closed_index].size() > 12);

  SECTION("deleted") {
    std::filesystem::remove(r.part + "/" + closed_index);
    std::filesystem::remove(r.part + "/" + closed_time);
  }
  SECTION("overwritten with garbage") {
    write_file(r.part + "/" + closed_index, std::string(before[closed_index].size(), '\x7f'));
    write_file(r.part + "/" + closed_time, std::string(before[closed_time].size(), '\x01'));
  }
  SECTION("cut short") {
    testing::truncate_file(r.part + "/" + closed_index, 12);
    testing::truncate_file(r.part + "/" + closed_time, 5);
  }
  std::filesystem::remove(r.part + "/clean");
  {
    auto log = r.open();
    r.check_records(*log, 600);
    CHECK(*log->offset_at(Timestamp(0)) == Offset(0));
    log->close();
  }
  CHECK(read_file(r.part + "/" + closed_index) == before[closed_index]);
  CHECK(read_file(r.part + "/" + closed_time) == before[closed_time]);
}

TEST_CASE("a clean marker does not make an index entry the log does not bear out believed", "[recovery]") {
  Recovery r;
  {
    auto log = r.open();
    r.write(*log, 3);
    log->close();
  }
  REQUIRE(std::filesystem::exists(r.part + "/clean"));
  // One entry in the format's rules (the first at position 0) that claims offset 5000 where the log's
  // first batch holds offsets 0..2.
  std::string entry(12, '\0');
  coding::put_fixed32(entry.data(), 5000);
  write_file(r.part + "/" + Segment::file_stem(Offset(0)) + ".index", entry);
  uint64_t next = 9;
  SECTION("in the active segment") {}
  SECTION("in a segment followed by an empty one") {
    write_file(r.log_file(1000), "");
    next = 1000;
  }
  auto log = r.open();
  CHECK(log->bounds() == Bounds{Offset(0), Offset(next)});
  r.check_records(*log, 9);
  auto appended = append_and_wait(*log, make_batch(next, 3));
  REQUIRE(appended.ok());
  CHECK(appended->first == Offset(next));
  // A read from the first offset passes the records of each segment in turn.
  auto all = read_all(*log, Offset(0));
  REQUIRE(all.size() == 12);
  CHECK(all[9].first == next);
  CHECK(all[11].second == payload_for(next + 2));
}

TEST_CASE("damage before the scanned tail fails the reads that reach it, loudly", "[recovery]") {
  Recovery r;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 20);
    log->close();
  }
  testing::flip_byte(r.log_file(), ends[4] + 40);  // inside batch 5 (offsets 15..17), long before the tail
  auto log = r.open();
  CHECK(log->bounds().next == Offset(60));
  auto before = log->read(Offset(0), 15, 1 << 20);
  REQUIRE(before.ok());
  CHECK(before->entries.size() == 15);
  auto hit = log->read(Offset(15), 10, 1 << 20);
  REQUIRE_FALSE(hit.ok());
  CHECK(hit.status().code() == Code::kStreamBackendFailed);
  CHECK(hit.status().field("position") == std::to_string(ends[4]));
  CHECK(hit.status().field("reason") == "CRC32C mismatch");
}

TEST_CASE("a stale active index left by a crash is re-derived from the log", "[recovery]") {
  Recovery r;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 30);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  // Cut the log back to 10 batches: index entries past the cut now point at nothing.
  testing::truncate_file(r.log_file(), ends[9]);
  auto log = r.open();
  CHECK(log->bounds().next == Offset(30));
  r.check_records(*log, 30);
  // Reads from every offset use the re-derived index.
  for (uint64_t from = 0; from < 30; ++from) REQUIRE(read_all(*log, Offset(from)).size() == 30 - from);
  auto next = append_and_wait(*log, make_batch(30, 3));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(30));
}

// Bytes [0, n) of `path` become zeros, as a disk may hold them after a cut that lost a file's first
// unsynced pages while its later pages and its size reached it.
void zero_front(const std::string& path, uint64_t n) {
  std::string bytes = read_file(path);
  std::fill(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n), '\0');
  write_file(path, bytes);
}

TEST_CASE("after a crash the active segment is trusted from its first byte, whatever its index says",
          "[recovery]") {
  Recovery r;
  std::vector<uint64_t> ends;
  {
    auto log = r.open();
    ends = r.write(*log, 30);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  // The first ten batches are zeros; the later ones, and index entries pointing at them, are intact.
  zero_front(r.log_file(), ends[9]);
  auto log = r.open();
  // Nothing is whole from the first byte: nothing is kept, and nothing is served past `next`.
  CHECK(log->bounds() == Bounds{Offset(0), Offset(0)});
  CHECK(read_all(*log, Offset(0)).empty());
  auto next = append_and_wait(*log, make_batch(0, 3));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(0));
  r.check_records(*log, 3);
}

TEST_CASE("a clean marker vouches for the active segment only as long as it says", "[recovery]") {
  Recovery r;
  std::string marker;
  {
    auto log = r.open();
    r.write(*log, 10);
    log->close();
    marker = read_file(r.part + "/clean");
  }
  {
    // Appends after the clean open, whose removal of the marker a crash undid (the journal's path
    // leaves that removal unsynced until its record is durable): never acknowledged.
    auto log = r.open();
    r.write(*log, 5);
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  write_file(r.part + "/clean", marker);
  auto log = r.open();
  CHECK(log->bounds() == Bounds{Offset(0), Offset(30)});
  r.check_records(*log, 30);
  CHECK(log->marked_clean());
  auto next = append_and_wait(*log, make_batch(30, 3));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(30));
}

TEST_CASE("every acknowledged batch survives losing unsynced data", "[recovery][fault]") {
  Recovery r;
  r.options = testing::small_partition_options(4096);
  testing::FaultInjectionFileSystem fs;
  uint64_t acknowledged = 0;
  {
    auto log = r.open(fs);
    for (int i = 0; i < 100; ++i) {
      auto res = append_and_wait(*log, make_batch(acknowledged, 3));
      REQUIRE(res.ok());
      acknowledged = res->last.value + 1;
    }
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  auto log = r.open(fs);
  CHECK(log->bounds().next == Offset(acknowledged));
  r.check_records(*log, acknowledged);
}

TEST_CASE("a failed sync acknowledges nothing and refuses appends until reopened", "[recovery][fault]") {
  Recovery r;
  testing::FaultInjectionFileSystem fs;
  {
    auto log = r.open(fs);
    REQUIRE(append_and_wait(*log, make_batch(0, 3)).ok());
    fs.fail_next_sync(EIO, ".log");
    auto failed = append_and_wait(*log, make_batch(3, 3));
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.status().code() == Code::kStreamBackendFailed);
    CHECK(failed.status().field("errno") == std::to_string(EIO));
    CHECK(log->failed());
    CHECK(log->bounds().next == Offset(3));
    auto refused = append_and_wait(*log, make_batch(3, 3));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == Code::kStreamBackendFailed);
    log->close();
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  auto log = r.open(fs);
  CHECK_FALSE(log->failed());
  CHECK(log->bounds().next == Offset(3));
  auto next = append_and_wait(*log, make_batch(3, 3));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(3));
}

TEST_CASE("a write the disk has no room for fails its batch only, the next takes its offsets", "[recovery][fault]") {
  Recovery r;
  testing::FaultInjectionFileSystem fs;
  auto log = r.open(fs);
  REQUIRE(append_and_wait(*log, make_batch(0, 2)).ok());
  fs.fail_next_write(ENOSPC, ".log");
  auto failed = append_and_wait(*log, make_batch(2, 2));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kStreamBackendFailed);
  CHECK(failed.status().field("errno") == std::to_string(ENOSPC));
  CHECK(failed.status().message().find("no space left") != std::string::npos);
  CHECK_FALSE(log->failed());
  CHECK(log->bounds().next == Offset(2));
  // Space is back: no restart needed, and the refused batch's offsets go to the next one.
  auto next = append_and_wait(*log, make_batch(2, 2));
  REQUIRE(next.ok());
  CHECK(next->first == Offset(2));
  REQUIRE(append_and_wait(*log, make_batch(4, 2)).ok());
  r.check_records(*log, 6);
  log->close(PartitionLog::CloseMode::kAsIs);
  log.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  log = r.open(fs);
  r.check_records(*log, 6);
}

TEST_CASE("a roll that finds no room for the next segment is tried again by the next append", "[recovery][fault]") {
  Recovery r;
  r.options = testing::small_partition_options(256);
  testing::FaultInjectionFileSystem fs;
  auto log = r.open(fs);
  r.write(*log, 1);
  uint64_t next = log->bounds().next.value;
  // Batches of 3 records pass 256 bytes together: the next append rolls, and the new segment's
  // index is a file it creates.
  while (log->segments().size() == 1) {
    REQUIRE(append_and_wait(*log, make_batch(next, 3)).ok());
    next += 3;
  }
  const size_t segments = log->segments().size();
  uint64_t appended = next;
  Result<AppendRange> failed = AppendRange{};
  // Appends until one rolls into the fault (the current segment may have room for a few).
  fs.fail_next_create(ENOSPC, ".index");
  while (failed.ok()) {
    failed = append_and_wait(*log, make_batch(appended, 3));
    if (failed.ok()) appended += 3;
  }
  CHECK(failed.status().field("errno") == std::to_string(ENOSPC));
  CHECK_FALSE(log->failed());
  CHECK(log->bounds().next == Offset(appended));
  CHECK_FALSE(std::filesystem::exists(r.part + "/" + Segment::file_stem(Offset(appended)) + ".log"));
  CHECK_FALSE(std::filesystem::exists(r.part + "/" + Segment::file_stem(Offset(appended)) + ".index"));
  // The next append creates the segment the failed roll could not and is written into it.
  auto after = append_and_wait(*log, make_batch(appended, 3));
  REQUIRE(after.ok());
  CHECK(after->first == Offset(appended));
  CHECK(log->segments().size() > segments);
  r.check_records(*log, appended + 3);
  log->close(PartitionLog::CloseMode::kAsIs);
  log.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  log = r.open(fs);
  r.check_records(*log, appended + 3);
}

// A process that stops between writing a group to the active segment and syncing it (or journaling it)
// leaves whole batches in the page cache, where the next start finds them. What that start serves must
// survive a power cut that comes before anything else syncs the segment: the batches a journal
// acknowledges next follow them, and a journal replay finds a gap where they were.
TEST_CASE("what recovery keeps of an active segment after a crash is synced before it is served",
          "[recovery][fault]") {
  testing::FaultInjectionFileSystem fs;
  testing::TempDir dir;
  SegmentOptions options;
  options.segment_bytes = 1 << 20;
  options.index_interval_bytes = 100;
  options.preallocate_bytes = 64 << 10;
  const auto append = [](Segment& seg, uint64_t first, Segment::Durability durability) {
    std::string b = make_batch(first, 3);
    seal_batch(b, Offset(first), Timestamp(1000));
    std::string_view piece(b);
    REQUIRE(seg.append(std::span<const std::string_view>(&piece, 1), durability).ok());
  };
  {
    auto seg = Segment::create(fs, dir.path(), Offset(0), options);
    REQUIRE(seg.ok());
    for (uint64_t i = 0; i < 4; ++i) append(**seg, 3 * i, Segment::Durability::kOwnSync);
    REQUIRE((*seg)->sync().ok());
    // Written, never synced nor journaled: the process stops here.
    for (uint64_t i = 4; i < 6; ++i) append(**seg, 3 * i, Segment::Durability::kJournal);
  }
  Offset served;
  {
    SegmentRecovery rec;
    auto seg = Segment::open(fs, dir.path(), Offset(0), options, SegmentRole::kActive, PriorClose::kUnknown, rec);
    REQUIRE(seg.ok());
    served = (*seg)->committed_end();
    CHECK(served == Offset(18));
  }
  REQUIRE(fs.drop_unsynced_data().ok());  // the power fails
  SegmentRecovery rec;
  auto seg = Segment::open(fs, dir.path(), Offset(0), options, SegmentRole::kActive, PriorClose::kUnknown, rec);
  REQUIRE(seg.ok());
  CHECK((*seg)->committed_end() == served);
}

TEST_CASE("orphan index files and unswapped compaction output are removed on open", "[recovery]") {
  Recovery r;
  {
    auto log = r.open();
    r.write(*log, 2);
    log->close();
  }
  write_file(r.part + "/" + Segment::file_stem(Offset(500)) + ".index", std::string(24, '\1'));
  write_file(r.part + "/" + Segment::file_stem(Offset(0)) + ".log.swap", "partial");
  auto log = r.open();
  CHECK_FALSE(std::filesystem::exists(r.part + "/" + Segment::file_stem(Offset(500)) + ".index"));
  CHECK_FALSE(std::filesystem::exists(r.part + "/" + Segment::file_stem(Offset(0)) + ".log.swap"));
  r.check_records(*log, 6);
}

}  // namespace
}  // namespace streamd
