// Partition recovery (server/storage/partition_log.h, segment.h) over a mutated segment file: the
// input is written as the partition's log (and optionally its offset index, a second segment and the
// clean marker), then the partition is opened as after a crash. Whatever the bytes, opening either
// fails with a Status or yields a partition whose reads return offsets in order inside its bounds
// (or, at a batch whose CRC holds over records that do not parse, STREAM_BACKEND_FAILED), that takes
// a new append right at its end (unless no offsets are left for it), and that reopens after a clean close with the same bounds and the
// same records.
//
// Input: a flags byte, then the file bytes.
//   bit 0: repair the CRCs of the log bytes first (fuzz_support.h), to reach the record decoder;
//   bit 1: leave the clean marker, so the files are trusted as a clean close left them;
//   bit 2: the first two bytes (little-endian) are the length of an offset index file that follows;
//   bit 3: split the log at a point given by the next two bytes: the bytes after it are a second,
//          active segment, named by the base offset its first batch claims.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/coding.h"
#include "server/storage/partition_log.h"
#include "server/storage/record_batch.h"
#include "server/storage/record_reader.h"
#include "server/storage/segment.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

using namespace streamd;

namespace {

void write(const std::string& path, const std::string& bytes) {
  auto file = posix_file_system().open(path, OpenMode::kCreate);
  if (!file.ok() || !(*file)->write_at(FilePosition(0), bytes).ok()) std::abort();
}

uint16_t take_u16(std::string& bytes) {
  if (bytes.size() < 2) return 0;
  const uint16_t v = static_cast<uint16_t>(static_cast<uint8_t>(bytes[0]) | (static_cast<uint8_t>(bytes[1]) << 8));
  bytes.erase(0, 2);
  return v;
}

using Entries = std::vector<std::pair<uint64_t, std::string>>;

void add_record(Entries& out, const RecordView& r, Offset from, Offset next) {
  if (r.offset < from || r.offset >= next) std::abort();
  if (!out.empty() && Offset(out.back().first) >= r.offset) std::abort();
  out.emplace_back(r.offset.value, std::string(r.key) + "/" + std::string(r.payload));
}

// Every record from `from` (default: first) on, checking order and bounds as it goes; in whole
// batches (as a Kafka Fetch reads), each whole batch's records decoded here. `stopped`: whether a
// batch whose records do not parse ended it early.
Entries read_everything(const PartitionLog& log, std::optional<Offset> start = std::nullopt,
                        ReadShape shape = ReadShape::kRecords, bool* stopped = nullptr) {
  const Bounds bounds = log.bounds();
  if (bounds.next < bounds.first) std::abort();
  Entries out;
  Offset from = start.value_or(bounds.first);
  if (stopped != nullptr) *stopped = false;
  while (from < bounds.next) {
    auto r = log.read(from, 5, 1 << 16, shape);
    if (!r.ok()) {
      // A batch whose CRC holds but whose records do not parse (bit 0 sealed damage as valid) is
      // reported, as the backend failing for that read; nothing else may stop a read in [first, next).
      if (r.status().code() != Code::kStreamBackendFailed) std::abort();
      if (stopped != nullptr) *stopped = true;
      break;
    }
    for (const EntryView& e : r->entries) {
      if (e.whole_batch == 0) {
        add_record(out, e, from, bounds.next);
        continue;
      }
      if (entry_end(e) > bounds.next) std::abort();  // never past the bounds the read began with
      RecordReader records(e.batch);
      RecordView record;
      uint32_t n = 0;
      for (; records.next(record); ++n) add_record(out, record, from, bounds.next);
      if (records.error()) {
        if (stopped != nullptr) *stopped = true;
        return out;
      }
      if (n != e.whole_batch) std::abort();
    }
    if (r->next_from <= from) std::abort();  // a reader inside [first, next) always moves on
    from = r->next_from;
  }
  return out;
}

PartitionOptions options() {
  PartitionOptions o;
  o.segment_bytes = 64 << 10;
  o.index_interval_bytes = 128;
  o.preallocate_bytes = 4096;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Split in = fuzz::split_flags(data, size);
  std::string index;
  if (in.flags & 4) {
    const size_t n = std::min<size_t>(take_u16(in.rest), in.rest.size());
    index = in.rest.substr(0, n);
    in.rest.erase(0, n);
  }
  std::string second;
  Offset second_base;
  if (in.flags & 8) {
    const size_t at = std::min<size_t>(take_u16(in.rest), in.rest.size());
    second = in.rest.substr(at);
    in.rest.resize(at);
    if (in.flags & 1) fuzz::repair_batch_crcs(second);
    second_base = second.size() >= batch_format::kMinHeaderSize
                      ? Offset(coding::get_fixed64(second.data() + batch_format::kBaseOffsetOffset))
                      : Offset(1000);
  }
  if (in.flags & 1) fuzz::repair_batch_crcs(in.rest);

  testing::TempDir dir;
  const std::string part = dir.file("p");
  if (!posix_file_system().create_dir(part).ok()) std::abort();
  write(part + "/" + Segment::file_stem(Offset(0)) + ".log", in.rest);
  if (in.flags & 4) write(part + "/" + Segment::file_stem(Offset(0)) + ".index", index);
  if ((in.flags & 8) && second_base != Offset(0)) write(part + "/" + Segment::file_stem(second_base) + ".log", second);
  if (in.flags & 2) write(part + "/clean", "");

  testing::ManualExecutor executor;
  Entries before;
  Bounds bounds;
  {
    auto opened = PartitionLog::open(posix_file_system(), part, options(), executor, SystemClock::instance());
    if (!opened.ok()) return 0;  // refused with a Status: fine, as long as nothing crashed
    PartitionLog& log = **opened;
    bool stopped = false;
    before = read_everything(log, std::nullopt, ReadShape::kRecords, &stopped);
    // Read in whole batches, the same records, wherever the read by record reached the end.
    if (!stopped && read_everything(log, std::nullopt, ReadShape::kBatches) != before) std::abort();

    // A recovered partition takes the next append at its end, whatever it recovered.
    const Bounds recovered = log.bounds();
    BatchBuilder b;
    b.add("k", "after-recovery");
    b.add("", "second");
    std::optional<Result<AppendRange>> appended;
    log.append(std::move(b).finish(), [&appended](Result<AppendRange> r) { appended = std::move(r); });
    executor.run_all();
    if (!appended) std::abort();
    if (appended->ok()) {
      if ((*appended)->first != recovered.next) std::abort();
      const Entries mine = read_everything(log, (*appended)->first);
      if (mine.size() != 2 || mine[0].second != "k/after-recovery" || mine[1].second != "/second") std::abort();
      before = read_everything(log);
    } else if (!log.failed() && recovered.next.value < UINT64_MAX - 1) {
      // An append may only fail on a partition that failed (its write or sync did), or one left without
      // the two offsets it needs (files that claim offsets near 2^64: partition_log.cc refuses a range
      // that would pass 2^64 - 1).
      std::abort();
    }
    bounds = log.bounds();
    log.close(PartitionLog::CloseMode::kClean);
    executor.run_all();
    if (!appended->ok()) return 0;
  }

  // What a clean close left is trusted and read back unchanged.
  auto reopened = PartitionLog::open(posix_file_system(), part, options(), executor, SystemClock::instance());
  if (!reopened.ok()) std::abort();
  if ((*reopened)->bounds().first != bounds.first || (*reopened)->bounds().next != bounds.next) std::abort();
  if (read_everything(**reopened) != before) std::abort();
  (*reopened)->close(PartitionLog::CloseMode::kClean);
  executor.run_all();
  return 0;
}
