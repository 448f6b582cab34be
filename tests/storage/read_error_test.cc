// Tests of reads on a failing disk (server/storage/segment.cc, partition_read.cc): a read whose pread
// fails EIO, or that finds its segment's file cut short under it, fails that read only, with
// STREAM_BACKEND_FAILED; the next read once the disk answers succeeds, other segments stay readable,
// and appends go on, because a read error is not a lost write.
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/partition_log.h"
#include "server/storage/segment.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::FaultInjectionFileSystem;
using testing::make_batch;
using testing::payload_for;

struct Partition {
  testing::TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<PartitionLog> log;

  Partition() {
    auto opened = PartitionLog::open(fs, dir.file("p0"), testing::small_partition_options(2048), pool, clock);
    REQUIRE(opened.ok());
    log = std::move(*opened);
  }
  void append(uint32_t records) {
    const uint64_t first = log->bounds().next.value;
    auto r = append_and_wait(*log, make_batch(first, records));
    REQUIRE(r.ok());
    REQUIRE(r->first == Offset(first));
  }
  std::string segment_log(size_t i) const {
    return dir.file("p0") + "/" + Segment::file_stem(log->segments()[i].base) + ".log";
  }
};

// A sealed batch of `count` records of `size` bytes from `base`, record o filled with 'a' + o % 26.
std::string sized_batch(uint64_t base, int count, size_t size) {
  BatchBuilder b;
  for (int i = 0; i < count; ++i) b.add("", std::string(size, static_cast<char>('a' + (base + i) % 26)));
  std::string batch = std::move(b).finish();
  seal_batch(batch, Offset(base), Timestamp(1));
  return batch;
}

std::vector<std::string> payloads(const ReadResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.entries) out.emplace_back(e.payload);
  return out;
}

std::vector<std::string> expected(uint64_t from, uint64_t to) {
  std::vector<std::string> out;
  for (uint64_t o = from; o < to; ++o) out.push_back(payload_for(o));
  return out;
}

TEST_CASE("a read meeting EIO fails with STREAM_BACKEND_FAILED, and the next read once the disk answers succeeds",
          "[read_error]") {
  Partition p;
  for (int i = 0; i < 80; ++i) p.append(4);
  const auto segments = p.log->segments();
  REQUIRE(segments.size() >= 3);
  const uint64_t end = p.log->bounds().next.value;

  p.fs.fail_reads(EIO, p.segment_log(0));
  auto failed = p.log->read(Offset(0), 1000, 1 << 20);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kStreamBackendFailed);
  CHECK(failed.status().field("op") == "pread");
  CHECK(failed.status().field("errno") == std::to_string(EIO));
  CHECK(failed.status().field("path") == p.segment_log(0));
  CHECK(p.fs.read_faults() >= 1);

  // The other segments read, appends are acknowledged, and the partition is not fenced.
  const Offset second = segments[1].base;
  auto other = p.log->read(second, 1000, 1 << 20);
  REQUIRE(other.ok());
  CHECK(payloads(*other) == expected(second.value, end));
  p.append(3);
  CHECK_FALSE(p.log->failed());
  // A retry while the disk still fails fails the same way.
  CHECK(p.log->read(Offset(1), 1000, 1 << 20).status().code() == Code::kStreamBackendFailed);

  p.fs.stop_failing_reads();
  auto again = p.log->read(Offset(0), 1000, 1 << 20);
  REQUIRE(again.ok());
  CHECK(payloads(*again) == expected(0, end + 3));
}

TEST_CASE("a read meeting EIO in its second segment fails whole, not with the first segment's records",
          "[read_error]") {
  Partition p;
  for (int i = 0; i < 80; ++i) p.append(4);
  REQUIRE(p.log->segments().size() >= 3);
  p.fs.fail_reads(EIO, p.segment_log(1));
  auto failed = p.log->read(Offset(0), 1000, 1 << 20);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().field("path") == p.segment_log(1));
  // Up to the failing segment, a read within the first one succeeds.
  auto first = p.log->read(Offset(0), 2, 1 << 20);
  REQUIRE(first.ok());
  CHECK(payloads(*first) == expected(0, 2));
}

TEST_CASE("a lookup by time meeting EIO fails, rather than answer a later segment's offset", "[read_error]") {
  Partition p;
  for (int i = 0; i < 80; ++i) {
    p.clock.advance(std::chrono::milliseconds(1));
    p.append(4);
  }
  REQUIRE(p.log->segments().size() >= 3);
  const Timestamp second_starts = p.log->segments()[1].min_appended_at;
  REQUIRE(*p.log->offset_at(second_starts) == p.log->segments()[1].base);
  p.fs.fail_reads(EIO, p.segment_log(1));
  auto failed = p.log->offset_at(second_starts);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kStreamBackendFailed);
  CHECK(failed.status().field("path") == p.segment_log(1));
  p.fs.stop_failing_reads();
  CHECK(*p.log->offset_at(second_starts) == p.log->segments()[1].base);
}

TEST_CASE("a segment file cut shorter than its committed records fails the read, and the process lives",
          "[read_error]") {
  testing::TempDir dir;
  SegmentOptions options;
  options.segment_bytes = 1 << 20;
  options.index_interval_bytes = 100;
  options.preallocate_bytes = 64 << 10;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options);
  REQUIRE(seg.ok());
  for (uint64_t base = 0; base < 40; base += 4) REQUIRE((*seg)->append(sized_batch(base, 4, 500)).ok());
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  const uint64_t committed = (*seg)->committed_size();
  REQUIRE(committed > 5 * 4096);
  // Whatever cut it (an operator, a failing device), the file now ends inside the committed records,
  // pages before their end: a mapping of them would raise SIGBUS on the first byte past the file.
  testing::truncate_file((*seg)->log_path(), 4096);
  ReadResult out;
  out.next_from = Offset(0);
  uint32_t records = 1000;
  uint64_t bytes = 1 << 20;
  Status s = (*seg)->read(Offset(0), records, bytes, out);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("path") == (*seg)->log_path());
  CHECK(std::stoull(s.field("position")) <= 4096);
  // Where the file still holds them, records read.
  ReadResult head;
  head.next_from = Offset(0);
  records = 4;
  bytes = 1 << 20;
  REQUIRE((*seg)->read(Offset(0), records, bytes, head).ok());
  REQUIRE(head.entries.size() == 4);
  CHECK(head.entries[3].payload == std::string(500, 'd'));
}

TEST_CASE("a read taking many chunks keeps every record it returns readable", "[read_error]") {
  testing::TempDir dir;
  SegmentOptions options;
  options.segment_bytes = 16 << 20;
  options.index_interval_bytes = 4096;
  options.preallocate_bytes = 1 << 20;
  auto seg = Segment::create(posix_file_system(), dir.path(), Offset(0), options);
  REQUIRE(seg.ok());
  // 12,000 records of 1,000 bytes, about 12 MB: more than one pread of a read takes.
  constexpr uint64_t kRecords = 12000;
  for (uint64_t base = 0; base < kRecords; base += 10) REQUIRE((*seg)->append(sized_batch(base, 10, 1000)).ok());
  REQUIRE((*seg)->sync().ok());
  (*seg)->publish();
  ReadResult out;
  out.next_from = Offset(0);
  auto records = static_cast<uint32_t>(kRecords);
  uint64_t bytes = 64ull << 20;
  REQUIRE((*seg)->read(Offset(0), records, bytes, out).ok());
  REQUIRE(out.entries.size() == kRecords);
  CHECK(out.owners.size() > 1);
  CHECK(out.next_from == Offset(kRecords));
  for (uint64_t o = 0; o < kRecords; ++o) {
    REQUIRE(out.entries[o].offset == Offset(o));
    REQUIRE(out.entries[o].payload == std::string(1000, static_cast<char>('a' + o % 26)));
  }
}

}  // namespace
}  // namespace streamd
