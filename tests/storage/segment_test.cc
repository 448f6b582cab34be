// Tests of server/storage/segment.cc: appends and indexing, publish, seal, reads, time lookups,
// names, and the zero-filled window (and the journaled writes that grow without it).
#include "server/storage/segment.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "server/storage/batch_builder.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::make_batch;
using testing::payload_for;

SegmentOptions options() {
  SegmentOptions o;
  o.segment_bytes = 1 << 20;
  o.index_interval_bytes = 100;
  o.preallocate_bytes = 64 << 10;
  return o;
}

// Appends `count` batches of 2 records from offset `base`, appended_at 1000 + i.
void fill(Segment& seg, Offset base, int count) {
  for (int i = 0; i < count; ++i) {
    std::string b = make_batch(base.value + 2 * i, 2);
    seal_batch(b, base + 2 * i, Timestamp(1000 + i));
    REQUIRE(seg.append(b).ok());
  }
  REQUIRE(seg.sync().ok());
  seg.publish();
}

TEST_CASE("file names carry the base offset in twenty digits", "[segment]") {
  CHECK(Segment::file_stem(Offset(42)) == "00000000000000000042");
  CHECK(Segment::parse_log_name("00000000000000000042.log") == Offset(42));
  CHECK_FALSE(Segment::parse_log_name("00000000000000000042.index").has_value());
  CHECK_FALSE(Segment::parse_log_name("0000000000000000004x.log").has_value());
  CHECK_FALSE(Segment::parse_log_name("42.log").has_value());
  CHECK(Segment::parse_log_name("18446744073709551615.log") == Offset(UINT64_MAX));
  // Past 2^64 - 1: not a segment's name, rather than a wrapped small offset.
  CHECK_FALSE(Segment::parse_log_name("18446744073709551616.log").has_value());
  CHECK_FALSE(Segment::parse_log_name("99999999999999999999.log").has_value());
}

TEST_CASE("written and committed ends are apart until publish", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(100), options());
  REQUIRE(seg.ok());
  std::string b = make_batch(100, 3);
  seal_batch(b, Offset(100), Timestamp(5));
  REQUIRE((*seg)->append(b).ok());
  CHECK((*seg)->written_end() == Offset(103));
  CHECK((*seg)->committed_end() == Offset(100));
  CHECK((*seg)->committed_size() == 0);
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  CHECK((*seg)->committed_end() == Offset(103));
  CHECK((*seg)->committed_size() == b.size());
  CHECK((*seg)->max_time() == Timestamp(5));
}

TEST_CASE("the log file is zero-filled ahead of the writer", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  fill(**seg, Offset(0), 1);
  CHECK(std::filesystem::file_size((*seg)->log_path()) == 64 << 10);
  std::string bytes = testing::read_file((*seg)->log_path());
  CHECK(bytes.find_first_not_of('\0', (*seg)->written_size()) == std::string::npos);
  REQUIRE((*seg)->seal().ok());
  CHECK(std::filesystem::file_size((*seg)->log_path()) == (*seg)->written_size());
}

TEST_CASE("a journaled segment grows without zeros through its first window, then fills ahead", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  const auto journaled = [&](uint64_t base, int records) {
    std::string b = make_batch(base, records);
    seal_batch(b, Offset(base), Timestamp(1000));
    const std::string_view piece = b;
    REQUIRE((*seg)->takes_journaled(b.size()));
    REQUIRE((*seg)->append({&piece, 1}, Segment::Durability::kJournal).ok());
  };
  journaled(0, 2);
  // A partition written once holds its records, not a window of zeros.
  CHECK(std::filesystem::file_size((*seg)->log_path()) == (*seg)->written_size());
  uint64_t next = 2;
  while ((*seg)->written_size() + 4096 < ZeroFillAhead::kFirstWindow) {
    journaled(next, 40);
    next += 40;
  }
  CHECK(std::filesystem::file_size((*seg)->log_path()) == (*seg)->written_size());
  // Past the first window a journaled write needs zeros first (on a storage thread, not the journal's).
  CHECK_FALSE((*seg)->takes_journaled(ZeroFillAhead::kFirstWindow));
  std::string b = make_batch(next, 200);
  seal_batch(b, Offset(next), Timestamp(1000));
  REQUIRE((*seg)->append(b).ok());
  CHECK(std::filesystem::file_size((*seg)->log_path()) > (*seg)->written_size());
  CHECK((*seg)->takes_journaled(100));
  // What grew without zeros reads back whole once published.
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  CHECK((*seg)->committed_end() == Offset(next + 200));
}

TEST_CASE("the offset index holds an entry per interval, the time index per new instant", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  fill(**seg, Offset(0), 30);
  // The writer's rule over the batches fill() wrote: an entry for the first, then for each batch at least
  // an interval past the last indexed one.
  size_t expected = 0;
  uint64_t pos = 0, last_indexed = 0;
  bool last_batch_indexed = false;
  for (int i = 0; i < 30; ++i) {
    last_batch_indexed = expected == 0 || pos - last_indexed >= options().index_interval_bytes;
    if (last_batch_indexed) {
      ++expected;
      last_indexed = pos;
    }
    pos += make_batch(2 * static_cast<uint64_t>(i), 2).size();
  }
  CHECK(expected < 30);  // the interval spans more than one batch
  size_t entries = (*seg)->offset_index_entries();
  CHECK(entries == expected);
  CHECK((*seg)->time_index_entries() == entries);
  REQUIRE((*seg)->seal().ok());
  // Sealing records the last batch's instant, unless its own entry holds it already.
  CHECK((*seg)->time_index_entries() == entries + (last_batch_indexed ? 0 : 1));
  CHECK(std::filesystem::file_size((*seg)->offset_index_path()) == entries * 12);
}

// A sealed batch of `count` records of `size` bytes of `fill`, from offset `base`.
std::string sealed_batch(uint64_t base, int count, size_t size, char fill, int64_t instant = 7) {
  BatchBuilder b;
  for (int i = 0; i < count; ++i) b.add("", std::string(size, fill));
  std::string batch = std::move(b).finish();
  seal_batch(batch, Offset(base), Timestamp(instant));
  return batch;
}

// A read from `from` within the limits, which must succeed.
ReadResult read_segment(const Segment& seg, uint64_t from, uint32_t records = 100000,
                        uint64_t bytes = 64ull << 20) {
  ReadResult out;
  out.next_from = Offset(from);
  REQUIRE(seg.read(Offset(from), records, bytes, out).ok());
  return out;
}

TEST_CASE("reads start from any offset and respect the limits", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(10), options());
  REQUIRE(seg.ok());
  fill(**seg, Offset(10), 25);
  for (uint64_t from = 10; from < 60; ++from) {
    ReadResult out;
    out.next_from = Offset(from);
    uint32_t records = 1000;
    uint64_t bytes = 1 << 20;
    REQUIRE((*seg)->read(Offset(from), records, bytes, out).ok());
    REQUIRE(out.entries.size() == 60 - from);
    CHECK(out.entries.front().offset == Offset(from));
    CHECK(out.entries.front().payload == payload_for(from));
    CHECK(out.next_from == Offset(60));
  }
  ReadResult out;
  uint32_t records = 3;
  uint64_t bytes = 1 << 20;
  REQUIRE((*seg)->read(Offset(13), records, bytes, out).ok());
  CHECK(out.entries.size() == 3);
  CHECK(records == 0);
  CHECK(out.next_from == Offset(16));
}

TEST_CASE("a batch whose offsets go backwards is answered as damage, not read out of order", "[segment]") {
  // CRC-valid batches this log never writes so (a writer's bug, or damage the CRC cannot see): 10..11,
  // then 2..3, so the segment's end is 4 and the first batch lies past it.
  testing::TempDir dir;
  SegmentOptions o = options();
  o.index_interval_bytes = 4096;  // only the first batch is indexed: every read walks from it
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), o);
  REQUIRE(seg.ok());
  for (uint64_t base : {10, 2}) {
    std::string b = make_batch(base, 2);
    seal_batch(b, Offset(base), Timestamp(1000));
    REQUIRE((*seg)->append(b).ok());
  }
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  for (uint64_t from : {0, 2, 3}) {
    ReadResult out;
    out.next_from = Offset(from);
    uint32_t records = 1000;
    uint64_t bytes = 1 << 20;
    Status s = (*seg)->read(Offset(from), records, bytes, out);
    CHECK(s.code() == Code::kStreamBackendFailed);
    for (const EntryView& e : out.entries) CHECK(e.offset < Offset(4));
  }
}

TEST_CASE("a read of an empty segment moves the cursor up to its base", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(40), options());
  REQUIRE(seg.ok());
  ReadResult out = read_segment(**seg, 37);  // the previous segment ended in a compaction hole
  CHECK(out.entries.empty());
  CHECK(out.next_from == Offset(40));
}

TEST_CASE("a read from inside a large batch returns the record asked for, never skips it", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  // Batches of 1000 records of 100 bytes: each about 103 KB.
  for (uint64_t base = 0; base < 3000; base += 1000) {
    REQUIRE((*seg)->append(sealed_batch(base, 1000, 100, static_cast<char>('a' + base / 1000))).ok());
  }
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  for (uint64_t from : {0, 999, 1000, 2500}) {
    ReadResult out = read_segment(**seg, from, 100000, 10);  // a tiny budget: one record comes back
    REQUIRE(out.entries.size() == 1);
    CHECK(out.entries[0].offset == Offset(from));
    CHECK(out.next_from == Offset(from + 1));
  }
}

TEST_CASE("offset_at scans from the time index to the first batch at or after the instant", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  fill(**seg, Offset(0), 20);  // batch i: offsets 2i, 2i+1 at instant 1000+i
  CHECK((*seg)->offset_at(Timestamp(0))->value() == Offset(0));
  for (int i = 0; i < 20; ++i) CHECK((*seg)->offset_at(Timestamp(1000 + i))->value() == Offset(2 * i));
  CHECK_FALSE((*seg)->offset_at(Timestamp(1020))->has_value());
}

TEST_CASE("reads follow an active segment as it grows past segment_bytes", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  // segment_bytes is 1 MiB; a single writer's segment may hold more (the log grows to 3 MiB here).
  auto append_mib = [&](uint64_t base) {
    REQUIRE((*seg)->append(sealed_batch(base, 1024, 1000, static_cast<char>('a' + base / 1024))).ok());
    REQUIRE((*seg)->sync().ok());
    (*seg)->publish();
  };
  append_mib(0);
  ReadResult early = read_segment(**seg, 0);
  REQUIRE(early.entries.size() == 1024);
  append_mib(1024);
  append_mib(2048);
  ReadResult late = read_segment(**seg, 1000);
  REQUIRE(late.entries.size() == 3072 - 1000);
  CHECK(late.entries.back().offset == Offset(3071));
  CHECK(late.entries.back().payload == std::string(1000, 'c'));
  CHECK(late.next_from == Offset(3072));
  // The earlier result still views the bytes it was read into.
  CHECK(early.entries.back().payload == std::string(1000, 'a'));
}

TEST_CASE("a gathered append of many batches, written in runs, reads back whole and indexed", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  // Ten batches of 100 records of 1000 bytes (about 100 KB each): about 1 MB, several write runs.
  std::vector<std::string> batches;
  for (uint64_t base = 0; base < 1000; base += 100) {
    batches.push_back(sealed_batch(base, 100, 1000, static_cast<char>('a' + base / 100)));
  }
  std::vector<std::string_view> pieces(batches.begin(), batches.end());
  REQUIRE((*seg)->append(pieces).ok());
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  CHECK((*seg)->committed_end() == Offset(1000));
  for (uint64_t from : {0, 99, 100, 555, 999}) {
    ReadResult out = read_segment(**seg, from, 1);
    REQUIRE(out.entries.size() == 1);
    CHECK(out.entries[0].offset == Offset(from));
    CHECK(out.entries[0].payload == std::string(1000, static_cast<char>('a' + from / 100)));
  }
}

TEST_CASE("a read's records stay readable after the segment is removed and destroyed", "[segment]") {
  testing::TempDir dir;
  ReadResult out;
  {
    auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
    REQUIRE(seg.ok());
    fill(**seg, Offset(0), 10);
    out = read_segment(**seg, 0);
    REQUIRE((*seg)->remove_files().ok());
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/" + Segment::file_stem(Offset(0)) + ".log"));
  REQUIRE(out.entries.size() == 20);
  for (uint64_t i = 0; i < 20; ++i) CHECK(out.entries[i].payload == payload_for(i));
}

TEST_CASE("last_record is the segment's newest record", "[segment]") {
  testing::TempDir dir;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
  REQUIRE(seg.ok());
  ReadResult empty;
  REQUIRE((*seg)->last_record(empty).ok());
  CHECK(empty.entries.empty());
  fill(**seg, Offset(0), 7);
  ReadResult out;
  REQUIRE((*seg)->last_record(out).ok());
  REQUIRE(out.entries.size() == 1);
  CHECK(out.entries[0].offset == Offset(13));
  CHECK(out.entries[0].payload == payload_for(13));
}

TEST_CASE("a reopened segment has the same ends, instants and index", "[segment]") {
  testing::TempDir dir;
  size_t entries = 0;
  uint64_t size = 0;
  {
    auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
    REQUIRE(seg.ok());
    fill(**seg, Offset(0), 12);
    entries = (*seg)->offset_index_entries();
    size = (*seg)->written_size();
  }
  SegmentRecovery rec;
  auto seg = Segment::open(posix_file_system(), dir.path(), Offset(0), options(), SegmentRole::kActive, PriorClose::kUnknown, rec);
  REQUIRE(seg.ok());
  CHECK_FALSE(rec.truncated);
  CHECK_FALSE(rec.corruption);
  CHECK((*seg)->written_end() == Offset(24));
  CHECK((*seg)->written_size() == size);
  CHECK((*seg)->committed_end() == Offset(24));
  CHECK((*seg)->max_time() == Timestamp(1011));
  CHECK((*seg)->offset_index_entries() == entries);
}

TEST_CASE("a sealed segment reopened after a crash is neither reported rebuilt nor sealed again", "[segment]") {
  testing::TempDir dir;
  std::string time_index;
  {
    auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options());
    REQUIRE(seg.ok());
    fill(**seg, Offset(0), 12);
    REQUIRE((*seg)->seal().ok());
    time_index = testing::read_file((*seg)->time_index_path());
  }
  SECTION("as a closed segment: its files stay as they are") {
    SegmentRecovery rec;
    auto seg = Segment::open(posix_file_system(), dir.path(), Offset(0), options(), SegmentRole::kClosed,
                             PriorClose::kUnknown, rec);
    REQUIRE(seg.ok());
    CHECK_FALSE(rec.index_rebuilt);
    CHECK_FALSE(rec.truncated);
    CHECK((*seg)->max_time() == Timestamp(1011));
    CHECK(testing::read_file((*seg)->time_index_path()) == time_index);
  }
  SECTION("as the active one (its successor's name was lost): it takes appends after its entries") {
    SegmentRecovery rec;
    auto seg = Segment::open(posix_file_system(), dir.path(), Offset(0), options(), SegmentRole::kActive,
                             PriorClose::kUnknown, rec);
    REQUIRE(seg.ok());
    CHECK_FALSE(rec.index_rebuilt);
    CHECK((*seg)->time_index_entries() == time_index.size() / 12);
    fill(**seg, Offset(24), 3);
    CHECK((*seg)->written_end() == Offset(30));
  }
}

TEST_CASE("a segment sealed, active again and sealed once more keeps both seal entries intact", "[segment]") {
  // The power went after a roll sealed the segment and before its successor's name was synced: the
  // segment took appends again and was sealed again, so its time index holds the first seal's entry
  // between interval entries. Recovery must find that intact too, not rebuild and reseal it.
  testing::TempDir dir;
  SegmentOptions opts = options();
  opts.index_interval_bytes = 1 << 20;  // only the first batch gets an interval entry
  {
    auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), opts);
    REQUIRE(seg.ok());
    fill(**seg, Offset(0), 12);
    REQUIRE((*seg)->seal().ok());
  }
  {
    SegmentRecovery rec;
    auto seg = Segment::open(posix_file_system(), dir.path(), Offset(0), opts, SegmentRole::kActive,
                             PriorClose::kUnknown, rec);
    REQUIRE(seg.ok());
    std::string b = make_batch(24, 2);
    seal_batch(b, Offset(24), Timestamp(2000));
    REQUIRE((*seg)->append(b).ok());
    REQUIRE((*seg)->sync().ok());
    (*seg)->publish();
    REQUIRE((*seg)->seal().ok());
    REQUIRE((*seg)->time_index_entries() == 3);
  }
  const std::string time_index = testing::read_file(dir.path() + "/" + Segment::file_stem(Offset(0)) + ".timeindex");
  SegmentRecovery rec;
  auto seg = Segment::open(posix_file_system(), dir.path(), Offset(0), opts, SegmentRole::kClosed,
                           PriorClose::kUnknown, rec);
  REQUIRE(seg.ok());
  CHECK_FALSE(rec.index_rebuilt);
  CHECK((*seg)->max_time() == Timestamp(2000));
  CHECK(testing::read_file((*seg)->time_index_path()) == time_index);
  auto at = (*seg)->offset_at(Timestamp(1011));
  REQUIRE(at.ok());
  CHECK(*at == std::optional<Offset>(Offset(22)));
}

}  // namespace
}  // namespace streamd
