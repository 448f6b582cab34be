#include "server/storage/segment.h"

#include <algorithm>

#include "server/storage/coding.h"
#include "server/storage/numbered_name.h"
#include "server/storage/record_reader.h"

namespace streamd {
namespace {

constexpr size_t kScanChunk = 1 << 20;
// Bounds of one pread of a read (read_chunk_bytes): a small read still takes a few batches at once, a
// large one is not held in memory beyond this much per chunk.
constexpr uint64_t kMinReadChunk = 16 << 10;
constexpr uint64_t kMaxReadChunk = 8 << 20;
constexpr size_t kBulkWriteBytes = 256 << 10;
// A write at least this large goes out in runs of about this size, each handed to the device as soon
// as it is written: the device writes one run while the next is copied into the page cache. Measured
// here, 8 MiB written in 256 KiB runs then synced went out 1.5 to 3 times as fast as in one write.
constexpr size_t kWriteBehindBytes = 256 << 10;

}  // namespace

std::string Segment::file_stem(Offset base) { return numbered_name::stem(base.value); }

std::optional<Offset> Segment::parse_log_name(const std::string& name) {
  auto base = numbered_name::parse(name, ".log");
  return base ? std::optional<Offset>(Offset(*base)) : std::nullopt;
}

Segment::Segment(FileSystem& fs, std::string dir, Offset base, SegmentOptions options)
    : fs_(fs),
      dir_(std::move(dir)),
      base_(base),
      options_(options),
      written_end_(base),
      zero_fill_(options.preallocate_bytes, options.segment_bytes) {
  committed_end_.store(base.value);
}

Segment::~Segment() = default;

std::string Segment::log_path() const { return dir_ + "/" + file_stem(base_) + ".log"; }
std::string Segment::offset_index_path() const { return dir_ + "/" + file_stem(base_) + ".index"; }
std::string Segment::time_index_path() const { return dir_ + "/" + file_stem(base_) + ".timeindex"; }

Result<std::shared_ptr<Segment>> Segment::create(FileSystem& fs, const std::string& dir, Offset base,
                                                 const SegmentOptions& options) {
  std::shared_ptr<Segment> seg(new Segment(fs, dir, base, options));
  auto log = fs.open(seg->log_path(), OpenMode::kCreateNew);
  if (!log.ok()) return log.status();
  seg->log_ = std::move(*log);
  // The indexes start empty and grow with the log (index_file.h): a segment written once costs a page each.
  Status mapped = seg->map_indexes(0, options.index_capacity(options.segment_bytes));
  if (!mapped.ok()) {
    seg->offset_index_.reset();
    seg->time_index_.reset();
    seg->log_.reset();
    for (const std::string& path : {seg->time_index_path(), seg->offset_index_path(), seg->log_path()}) {
      if (!fs.exists(path)) continue;
      Status removed = fs.remove(path);
      // The files stay when they cannot be removed: the caller must not create this base again.
      if (!removed.ok()) return removed;
    }
    return mapped;
  }
  return seg;
}

Result<std::shared_ptr<Segment>> Segment::open(FileSystem& fs, const std::string& dir, Offset base,
                                               const SegmentOptions& options, SegmentRole role,
                                               PriorClose prior, SegmentRecovery& recovery) {
  std::shared_ptr<Segment> seg(new Segment(fs, dir, base, options));
  auto log = fs.open(seg->log_path(), OpenMode::kReadWrite);
  if (!log.ok()) return log.status();
  seg->log_ = std::move(*log);
  auto size = seg->log_->size();
  if (!size.ok()) return size.status();
  STREAMD_RETURN_IF_ERROR(seg->map_indexes_as_found(role, *size));
  STREAMD_RETURN_IF_ERROR(seg->recover(role, prior, recovery));
  return seg;
}

Status Segment::map_indexes(size_t capacity, size_t grows_to) {
  // Unmapped first, so a remap of the same files never holds two mappings.
  offset_index_.reset();
  time_index_.reset();
  auto oi = OffsetIndex::open(fs_, offset_index_path(), capacity, grows_to);
  if (!oi.ok()) return oi.status();
  offset_index_ = std::move(*oi);
  auto ti = TimeIndex::open(fs_, time_index_path(), capacity, grows_to);
  if (!ti.ok()) return ti.status();
  time_index_ = std::move(*ti);
  return Status();
}

Status Segment::map_indexes_as_found(SegmentRole role, uint64_t log_bytes) {
  // An active segment's indexes grow with its appends, a closed segment's only when they must be rebuilt.
  const bool active = role == SegmentRole::kActive;
  return map_indexes(0, active ? options_.index_capacity(std::max(options_.segment_bytes, log_bytes)) : 0);
}

Status Segment::grow_indexes(uint64_t log_bytes) {
  const size_t oi_count = offset_index_->count();
  const size_t ti_count = time_index_->count();
  STREAMD_RETURN_IF_ERROR(map_indexes(options_.index_capacity(log_bytes),
                                      options_.index_capacity(std::max(options_.segment_bytes, log_bytes))));
  offset_index_->set_count(oi_count);
  time_index_->set_count(ti_count);
  return Status();
}

bool Segment::indexes(FilePosition position) const {
  return !any_indexed_ || position.value - last_indexed_pos_ >= options_.index_interval_bytes;
}

void Segment::index_batch(const BatchHeader& header, FilePosition position) {
  if (!indexes(position)) return;
  auto relative = RelativeOffset(static_cast<uint32_t>(header.base_offset - base_));
  offset_index_->append({relative, position});
  time_index_->maybe_append({header.appended_at, relative});
  any_indexed_ = true;
  last_indexed_pos_ = position.value;
}

bool Segment::grows_unfilled(uint64_t end) const {
  return end > zero_fill_.end() && end <= ZeroFillAhead::kFirstWindow && end <= options_.segment_bytes;
}

bool Segment::takes_journaled(uint64_t bytes) const {
  const uint64_t end = written_size_ + bytes;
  return !sealed() && (end <= zero_fill_.end() || grows_unfilled(end));
}

Status Segment::append(std::span<const std::string_view> pieces, Durability durability) {
  const uint64_t start = written_size_;
  uint64_t total = 0;
  for (std::string_view piece : pieces) total += piece.size();
  // A large write pays the file-size journal commit once for many bytes; zero-filling ahead of it would
  // double what reaches the disk for little gain. Small writes keep landing in zero-filled blocks, but
  // for a journaled segment's first window.
  const bool unfilled = durability == Durability::kJournal && grows_unfilled(start + total);
  if (!unfilled && (total < kBulkWriteBytes || start + total <= zero_fill_.end())) {
    STREAMD_RETURN_IF_ERROR(zero_fill_.ensure(*log_, written_size_, start + total));
  }
  // Runs of whole pieces up to kWriteBehindBytes (one run when the total is smaller).
  uint64_t run_at = start;
  for (size_t i = 0; i < pieces.size();) {
    size_t end = i;
    uint64_t run = 0;
    while (end < pieces.size() && (run == 0 || run + pieces[end].size() <= kWriteBehindBytes)) {
      run += pieces[end++].size();
    }
    STREAMD_RETURN_IF_ERROR(log_->write_vectored(FilePosition(run_at), pieces.subspan(i, end - i)));
    if (total >= kWriteBehindBytes) log_->start_writeback(FilePosition(run_at), run);
    run_at += run;
    i = end;
  }
  // Index after writing: the entries are derived data and never point at bytes not yet written.
  uint64_t at = start;
  for (std::string_view piece : pieces) {
    for (size_t pos = 0; pos < piece.size();) {
      BatchHeader h = peek_header(piece.substr(pos));
      index_batch(h, FilePosition(at + pos));
      written_end_ = h.end_offset();
      written_max_time_ = std::max(written_max_time_, h.appended_at);
      pos += static_cast<size_t>(h.total_size());
    }
    at += piece.size();
  }
  written_size_ = start + total;
  return Status();
}

Status Segment::sync() { return log_->sync(); }

void Segment::publish() {
  max_time_.store(written_max_time_.micros, std::memory_order_release);
  committed_end_.store(written_end_.value, std::memory_order_release);
  committed_size_.store(written_size_, std::memory_order_release);
}

Status Segment::discard_unwritten() { return cut_unfinished_write(*log_, written_size_, &zero_fill_); }

Status Segment::seal() {
  if (sealed()) return Status();
  STREAMD_RETURN_IF_ERROR(log_->truncate(written_size_));
  STREAMD_RETURN_IF_ERROR(log_->sync());
  zero_fill_.reset(written_size_);
  if (written_size_ > 0) {
    // Recorded so a closed segment's newest instant is its time index's last entry.
    time_index_->maybe_append({written_max_time_, RelativeOffset(static_cast<uint32_t>(written_end_ - base_ - 1))});
  }
  STREAMD_RETURN_IF_ERROR(offset_index_->seal());
  STREAMD_RETURN_IF_ERROR(time_index_->seal());
  sealed_.store(true, std::memory_order_release);
  return Status();
}

Timestamp Segment::min_time() const {
  if (time_index_->count() == 0) return Timestamp();
  // An unreadable first entry answers the segment's newest instant: what decides on age (rolling the
  // active segment, compaction) then waits longer, never acts early.
  std::optional<TimeIndexEntry> first = time_index_->first();
  return first ? first->time : max_time();
}

SegmentInfo Segment::info(bool active) const {
  return {base_, committed_end(), committed_size(), min_time(), max_time(), active};
}

FilePosition Segment::start_position(Offset from) const {
  if (from <= base_) return FilePosition(0);
  uint64_t rel = from - base_;
  auto e = offset_index_->floor(RelativeOffset(static_cast<uint32_t>(std::min<uint64_t>(rel, UINT32_MAX))));
  return e ? e->position : FilePosition(0);
}

size_t Segment::read_chunk_bytes(uint32_t records_left, uint64_t bytes_left) const {
  // The records asked for at the segment's mean log bytes per offset, or the byte budget with room
  // for what encoding adds to a record, whichever is less; plus the walk from the index entry.
  const uint64_t offsets = std::max<uint64_t>(committed_end() - base_, 1);
  const uint64_t per_offset = committed_size() / offsets + 1;
  const uint64_t by_records = static_cast<uint64_t>(records_left) * per_offset;
  const uint64_t by_bytes = bytes_left > kMaxReadChunk ? kMaxReadChunk : bytes_left + bytes_left / 8;
  const uint64_t want = std::min(by_records, by_bytes) + options_.index_interval_bytes;
  return static_cast<size_t>(std::clamp<uint64_t>(want, kMinReadChunk, kMaxReadChunk));
}

Status Segment::read(Offset from, uint32_t& records_left, uint64_t& bytes_left, ReadResult& out,
                     ReadShape shape) const {
  const uint64_t limit = committed_size();
  if (limit == 0) {
    out.next_from = std::max(out.next_from, committed_end());  // an empty segment: nothing to read
    return Status();
  }
  FilePosition start = start_position(from);
  for (int attempt = 0; attempt < 2; ++attempt) {
    // pread into buffers the result keeps: a page the disk cannot return fails this read with EIO,
    // where a mapping of it would raise SIGBUS (docs/FORMAT.md).
    LogReader reader(*log_, start, limit, read_chunk_bytes(records_left, bytes_left), ChunkBuffers::kKept);
    const char* kept = nullptr;  // the chunk last added to out.owners
    LogBatch b;
    bool first = true;
    bool index_wrong = false;
    Offset walked_end = base_;  // where the batches walked so far end
    while (records_left > 0 && reader.next(b)) {
      if (first && b.header.base_offset > from && start.value != 0) {
        index_wrong = true;  // the index pointed past the batch holding `from`
        break;
      }
      first = false;
      // A batch whose CRC holds but whose offsets go backwards or past the segment's end was never
      // written so by this log: answered as damage, never read out of order or beyond the bounds.
      if (b.header.base_offset < walked_end || b.header.end_offset() > committed_end()) {
        return Status(Code::kStreamBackendFailed, "a stored batch is damaged",
                      {{"path", log_path()},
                       {"position", std::to_string(b.position.value)},
                       {"reason", "its offsets do not follow the batches before it"}});
      }
      walked_end = b.header.end_offset();
      if (b.header.end_offset() <= from) continue;
      const size_t taken_before = out.entries.size();
      // The batch whole where the shape asks for it and it may be, its records not decoded.
      WholeBatch whole = WholeBatch::kRecords;
      if (shape == ReadShape::kBatches) {
        whole = take_whole_batch(b.header, b.bytes, b.header.appended_at, records_left, bytes_left, out);
        if (whole == WholeBatch::kSpent) break;
      }
      if (whole == WholeBatch::kRecords) {
        RecordReader records(b.bytes);
        // Each record is decoded in place into a new last entry, which is dropped again when the record
        // is before `from` or over the byte budget: cheaper than decoding elsewhere and moving it.
        while (records_left > 0) {
          EntryView& e = out.entries.emplace_back();
          if (!records.next(e)) {
            out.entries.pop_back();
            break;  // the batch's end, or damage (checked below)
          }
          if (e.offset < from) {
            out.entries.pop_back();
            continue;
          }
          uint64_t size = record_size(e.key, e.payload, e.headers);
          if (size > bytes_left && out.entries.size() > 1) {
            out.entries.pop_back();
            records_left = 0;  // the byte budget is spent; stop the whole read here
            break;
          }
          e.appended_at = b.header.appended_at;
          e.batch = b.bytes;
          bytes_left = size > bytes_left ? 0 : bytes_left - size;
          out.next_from = e.offset + 1;
          --records_left;
        }
        if (records.error()) {
          return Status(Code::kStreamBackendFailed, "a batch's records do not parse",
                        {{"path", log_path()}, {"position", std::to_string(b.position.value)}});
        }
      }
      if (out.entries.size() > taken_before && reader.chunk().get() != kept) {
        kept = reader.chunk().get();
        out.owners.push_back(reader.chunk());
      }
      // Past every record of this batch (holes included) when the walk goes on.
      if (records_left > 0) {
        out.next_from = std::max(out.next_from, b.header.end_offset());
        reader.set_chunk_bytes(read_chunk_bytes(records_left, bytes_left));
      }
    }
    if (!reader.io_status().ok()) return reader.io_status();
    if (index_wrong) {
      start = FilePosition(0);  // a damaged index costs a longer scan, never a wrong answer
      continue;
    }
    if (records_left == 0) return Status();
    // The walk ended before the limits did: it must have reached the committed end. Anything else is
    // damage (or a file cut shorter than its committed size under the reader), reported rather than
    // skipped, so a reader never jumps over records it did not get.
    if (reader.stop() != BatchCheck::kOk) {
      return Status(Code::kStreamBackendFailed, "a stored batch is damaged",
                    {{"path", log_path()},
                     {"position", std::to_string(reader.stop_position().value)},
                     {"reason", reader.reason().empty() ? "records end before the committed end" : reader.reason()}});
    }
    out.next_from = std::max(out.next_from, committed_end());
    return Status();
  }
  return Status();
}

Result<std::optional<Offset>> Segment::offset_at(Timestamp t) const {
  if (committed_size() == 0 || max_time() < t) return std::optional<Offset>();
  FilePosition start(0);
  if (auto before = time_index_->last_before(t)) {
    if (auto e = offset_index_->floor(before->relative)) start = e->position;
  }
  LogReader reader(*log_, start, committed_size(), kScanChunk);
  LogBatch b;
  while (reader.next(b)) {
    if (b.header.appended_at >= t) return std::optional<Offset>(b.header.base_offset);
  }
  if (!reader.io_status().ok()) return reader.io_status();
  return std::optional<Offset>();
}

Status Segment::last_record(ReadResult& out) const {
  const uint64_t limit = committed_size();
  if (limit == 0) return Status();
  FilePosition start(0);
  if (std::optional<OffsetIndexEntry> e = offset_index_->last(); e && e->position.value < limit) {
    start = e->position;
  }
  LogReader reader(*log_, start, limit, kScanChunk);
  LogBatch b, last;
  bool any = false;
  std::string copy;
  while (reader.next(b)) {
    last = b;
    any = true;
    // Copied as it is met: the reader's next refill may reuse the chunk it lives in.
    copy.assign(b.bytes);
  }
  if (!reader.io_status().ok()) return reader.io_status();
  if (!any) return Status();
  auto owned = std::make_shared<const std::string>(std::move(copy));
  RecordReader records(*owned);
  RecordView r;
  std::optional<EntryView> tail;
  while (records.next(r)) tail = make_entry(r, last.header.appended_at, *owned);
  if (tail) {
    out.entries.push_back(*tail);
    out.next_from = tail->offset + 1;
    out.owners.push_back(std::move(owned));
  }
  return Status();
}

Status Segment::scan(const std::function<bool(const LogBatch&)>& visit) const {
  LogReader reader(*log_, FilePosition(0), committed_size(), kScanChunk);
  LogBatch b;
  while (reader.next(b)) {
    if (!visit(b)) return Status();
  }
  if (!reader.io_status().ok()) return reader.io_status();
  if (reader.stop() == BatchCheck::kCorrupt) {
    return Status(Code::kStreamBackendFailed, "a stored batch is damaged",
                  {{"path", log_path()}, {"reason", reader.reason()}});
  }
  return Status();
}

bool Segment::note_read_failing(bool failing) const {
  if (!failing && !read_failing_.load(std::memory_order_relaxed)) return false;  // the common case: no write
  return read_failing_.exchange(failing, std::memory_order_relaxed);
}

Status Segment::remove_files() {
  for (const auto& path : {log_path(), offset_index_path(), time_index_path()}) {
    Status s = fs_.remove(path);
    if (!s.ok() && fs_.exists(path)) return s;
  }
  return Status();
}

}  // namespace streamd
