// Segment::open's recovery, in the steps it takes: keep the index entries that can be trusted, scan
// the log forward from the last of them, then decide what follows the records — preallocated zeros
// (the clean end), a torn write (the process stopped mid-append) or damage (a bad batch followed by a
// good one) — the way leveldb's log reader tells the end of a file from a bad record.
#include <algorithm>
#include <optional>
#include <vector>

#include "server/storage/coding.h"
#include "server/storage/segment.h"

namespace streamd {
namespace {

constexpr size_t kRecoveryScanChunk = 1 << 20;
constexpr size_t kProbeChunk = 64 << 10;

}  // namespace

// Where the forward scan starts: just after the offset-index entries kept.
struct Segment::ScanStart {
  size_t found = 0;  // offset-index entries that obeyed the format
  size_t kept = 0;   // of those, the ones whose last entry starts a batch of this segment
  FilePosition position;
  RelativeOffset relative;
};

Status Segment::recover(SegmentRole role, PriorClose prior, SegmentRecovery& recovery) {
  auto size = log_->size();
  if (!size.ok()) return size.status();
  const uint64_t file_size = *size;

  STREAMD_RETURN_IF_ERROR(replace_unreadable_indexes(role, file_size, recovery));
  // After a crash, an active segment's log is durable only as far as its last sync (its own, or a
  // journal checkpoint's) reached, and where that was is not recorded: a cut may have kept later
  // writes whole, torn, or not at all, in any order, and its indexes, stored through a mapping and
  // never synced while it is active, may hold entries for bytes the log lost. So nothing of it is
  // trusted: it is scanned from its first byte, its index entries derived anew, and whatever follows
  // the first batch that is not whole is cut away; the journal holds every record a cut could have
  // taken from it (docs/FORMAT.md §Recovery). A closed segment was sealed, log and indexes synced,
  // before its successor was made, and a clean close synced the active one the same way.
  const bool from_start = role == SegmentRole::kActive && prior != PriorClose::kClean;
  std::vector<OffsetIndexEntry> found;  // the file's entries, to tell whether the scan changed them
  const ScanStart start = from_start ? forget_offset_index(file_size, found) : keep_offset_index(file_size, prior, recovery);
  std::vector<TimeIndexEntry> unverified;
  const size_t time_found = keep_time_index(start, prior, recovery, unverified);
  BatchCheck stop = BatchCheck::kOk;
  std::string stop_reason;
  STREAMD_RETURN_IF_ERROR(scan_records(start, file_size, unverified, recovery, stop, stop_reason));
  // Entries the file lacked were re-derived: a closed segment must be sealed again.
  const bool offsets_changed = from_start ? !offset_index_holds(found) : offset_index_->count() != start.found;
  if (offsets_changed || time_index_->count() != time_found) recovery.index_rebuilt = true;
  STREAMD_RETURN_IF_ERROR(settle_tail(file_size, role, stop, stop_reason, recovery));
  // What the scan kept may be in the page cache only: a process that stopped between writing a group
  // and syncing or journaling it leaves whole batches there. They are served from here on, and the
  // journal acknowledges the next batches after them, so they are made durable first (a cut tail was
  // synced by settle_tail); a power cut would otherwise take them and leave a gap before those.
  if (from_start && !recovery.truncated) STREAMD_RETURN_IF_ERROR(log_->sync());

  committed_size_.store(written_size_, std::memory_order_release);
  committed_end_.store(written_end_.value, std::memory_order_release);
  max_time_.store(written_max_time_.micros, std::memory_order_release);

  // A closed segment must again be exact: cut to size, its last batch in the time index.
  const std::optional<TimeIndexEntry> last_time = time_index_->last();
  if (role == SegmentRole::kClosed &&
      (recovery.index_rebuilt || recovery.truncated || written_size_ < file_size || !last_time ||
       last_time->time < written_max_time_)) {
    if (time_index_->count() + 1 > time_index_->capacity()) STREAMD_RETURN_IF_ERROR(grow_indexes(written_size_));
    return seal();
  }
  return Status();
}

// Step 0. An index whose pages the disk cannot return would fail every lookup (and, unguarded, raise
// SIGBUS: index_file.h); indexes are derived data, so both files are removed and made anew, and the
// scan below re-derives their entries from the log. Past this check recovery reads entries in place:
// it has just touched every page.
Status Segment::replace_unreadable_indexes(SegmentRole role, uint64_t file_size, SegmentRecovery& recovery) {
  if (offset_index_->readable() && time_index_->readable()) return Status();
  recovery.index_unreadable = true;
  offset_index_.reset();
  time_index_.reset();
  for (const std::string& path : {offset_index_path(), time_index_path()}) STREAMD_RETURN_IF_ERROR(fs_.remove(path));
  return map_indexes_as_found(role, file_size);
}

// Step 1. Keeps the offset-index entries that obey the format and whose last entry really starts a
// batch of this segment. A clean close spares only the check of the index's zero tail: the scan starts
// at the last entry and takes its offset as the records' end so far, so an entry the log does not bear
// out, even under a clean marker, would make offsets of the segment that no batch holds (and whose
// reads would skip the next segment's records) and cut the batches after its position as damage.
Segment::ScanStart Segment::keep_offset_index(uint64_t file_size, PriorClose prior, SegmentRecovery& recovery) {
  const bool trusted = prior == PriorClose::kClean;
  ScanStart start;
  bool clean_tail = true;
  start.found = offset_index_->valid_prefix(file_size, clean_tail);
  start.kept = start.found;
  while (start.kept > 0) {
    OffsetIndexEntry e = offset_index_->at(start.kept - 1);
    LogReader probe(*log_, e.position, file_size, kProbeChunk);
    LogBatch b;
    if (probe.next(b) && b.header.base_offset == base_ + e.relative.value) break;
    --start.kept;
  }
  if (start.kept != start.found || (!trusted && !clean_tail)) recovery.index_rebuilt = true;
  offset_index_->set_count(start.kept);
  if (start.kept > 0) {
    const OffsetIndexEntry last = offset_index_->at(start.kept - 1);
    start.position = last.position;
    start.relative = last.relative;
  }
  any_indexed_ = start.kept > 0;
  last_indexed_pos_ = start.position.value;
  return start;
}

// Step 1, for an active segment after a crash: no entry is kept, so the scan starts at byte 0. The
// entries the file held are kept aside in `found`, so that a rebuild that derived the same ones is not
// reported.
Segment::ScanStart Segment::forget_offset_index(uint64_t file_size, std::vector<OffsetIndexEntry>& found) {
  bool clean_tail = true;
  const size_t n = offset_index_->valid_prefix(file_size, clean_tail);
  found.reserve(n);
  for (size_t i = 0; i < n; ++i) found.push_back(offset_index_->at(i));
  offset_index_->set_count(0);
  any_indexed_ = false;
  last_indexed_pos_ = 0;
  return ScanStart{};
}

bool Segment::offset_index_holds(const std::vector<OffsetIndexEntry>& entries) const {
  if (offset_index_->count() != entries.size()) return false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!(offset_index_->at(i) == entries[i])) return false;
  }
  return true;
}

// Step 2. Keeps the time-index entries for batches before the scan start; the rest go to `unverified`
// for the scan to check against the batches. Returns how many entries obeyed the format.
size_t Segment::keep_time_index(const ScanStart& start, PriorClose prior, SegmentRecovery& recovery,
                                std::vector<TimeIndexEntry>& unverified) {
  bool time_clean = true;
  const size_t time_found = time_index_->valid_prefix(UINT32_MAX + 1ull, time_clean);
  size_t time_keep = 0;
  while (time_keep < time_found && start.kept > 0 && time_index_->at(time_keep).relative < start.relative) {
    ++time_keep;
  }
  for (size_t i = time_keep; i < time_found; ++i) unverified.push_back(time_index_->at(i));
  if (prior != PriorClose::kClean && !time_clean) recovery.index_rebuilt = true;
  time_index_->set_count(time_keep);
  if (time_keep > 0) written_max_time_ = time_index_->at(time_keep - 1).time;
  return time_found;
}

// Step 3. Scans forward to the end of the valid records, re-deriving index entries past the scan
// start. A time entry the writer did not derive from an index interval — the one seal() adds for a
// segment's last record, which stays inside a segment that became active again when the power went
// before its successor's name was synced — is kept when the file had it and a scanned batch bears it
// out, so that an intact segment is found intact. `stop` and `stop_reason` say why the records ended.
Status Segment::scan_records(const ScanStart& start, uint64_t file_size,
                             const std::vector<TimeIndexEntry>& unverified, SegmentRecovery& recovery,
                             BatchCheck& stop, std::string& stop_reason) {
  // Grown only when an entry would not fit: a sealed segment's indexes are exactly as long as their
  // entries, and one found intact is left as it is.
  auto ensure_room = [&](size_t offset_entries, size_t time_entries) -> Status {
    if (offset_index_->count() + offset_entries <= offset_index_->capacity() &&
        time_index_->count() + time_entries <= time_index_->capacity()) {
      return Status();
    }
    return grow_indexes(file_size);
  };
  // The file's entries for batch `b`, kept when the batch bears them out (its instant, an offset of it)
  // and maybe_append would keep them (newer than the last entry); entries for earlier batches that no
  // batch bore out are passed over.
  size_t next_unverified = 0;
  auto keep_verified = [&](const LogBatch& b) -> Status {
    const uint64_t first_rel = b.header.base_offset - base_;
    const uint64_t last_rel = b.header.end_offset() - base_ - 1;
    for (; next_unverified < unverified.size() && unverified[next_unverified].relative.value <= last_rel;
         ++next_unverified) {
      const TimeIndexEntry& e = unverified[next_unverified];
      const std::optional<TimeIndexEntry> prev = time_index_->last();
      if (e.relative.value < first_rel || e.time != b.header.appended_at) continue;
      if (prev && (e.time <= prev->time || e.relative <= prev->relative)) continue;
      STREAMD_RETURN_IF_ERROR(ensure_room(0, 1));
      time_index_->maybe_append(e);
    }
    return Status();
  };
  LogReader reader(*log_, start.position, file_size, kRecoveryScanChunk);
  LogBatch b;
  bool first = true;
  written_size_ = start.position.value;
  written_end_ = start.kept > 0 ? base_ + start.relative.value : base_;
  while (reader.next(b)) {
    if (b.header.base_offset < written_end_) {
      recovery.reason = "batch offsets go backwards";
      break;
    }
    const bool first_indexed = first && start.kept > 0;
    const size_t new_entries = !first_indexed && indexes(b.position) ? 1 : 0;
    STREAMD_RETURN_IF_ERROR(ensure_room(new_entries, first_indexed ? 1 : new_entries));
    if (first_indexed) {
      // Already in the offset index; its time entry was dropped with the rest and is re-derived here.
      time_index_->maybe_append({b.header.appended_at, RelativeOffset(static_cast<uint32_t>(start.relative.value))});
    } else {
      index_batch(b.header, b.position);
    }
    STREAMD_RETURN_IF_ERROR(keep_verified(b));
    first = false;
    written_size_ = b.position.value + b.header.total_size();
    written_end_ = b.header.end_offset();
    written_max_time_ = std::max(written_max_time_, b.header.appended_at);
  }
  stop = reader.stop();
  stop_reason = reader.reason();
  return reader.io_status();
}

// Step 4. Whatever follows the records is preallocated zeros (kept, for the active segment), a torn
// write, or damage; the last two are truncated. A bad batch followed by a good one is damage and
// reported as corruption.
Status Segment::settle_tail(uint64_t file_size, SegmentRole role, BatchCheck stop, const std::string& stop_reason,
                            SegmentRecovery& recovery) {
  const uint64_t end = written_size_;
  zero_fill_.reset(end);
  if (end >= file_size) return Status();
  bool only_zeros = false;
  if (stop == BatchCheck::kZeroFilled) {
    auto zeros = only_zeros_from(end, file_size);
    if (!zeros.ok()) return zeros.status();
    only_zeros = *zeros;
  }
  if (only_zeros && role == SegmentRole::kActive) {
    zero_fill_.reset(file_size);
    return Status();
  }
  recovery.truncated = !only_zeros;
  recovery.truncated_at = end;
  recovery.dropped_bytes = file_size - end;
  if (recovery.reason.empty()) recovery.reason = stop_reason.empty() ? "batch cut short" : stop_reason;
  if (!only_zeros) recovery.corruption = valid_batch_follows(end, file_size);
  STREAMD_RETURN_IF_ERROR(log_->truncate(end));
  return log_->sync();
}

Result<bool> Segment::only_zeros_from(uint64_t pos, uint64_t file_size) const {
  for (; pos < file_size; pos += kRecoveryScanChunk) {
    std::string chunk(static_cast<size_t>(std::min<uint64_t>(kRecoveryScanChunk, file_size - pos)), '\0');
    auto n = log_->read_at(FilePosition(pos), chunk.data(), chunk.size());
    if (!n.ok()) return n.status();
    if (!std::all_of(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(*n), [](char c) { return c == 0; })) {
      return false;
    }
  }
  return true;
}

// Whether a valid batch starts where the bad one at `pos` would have ended, by its length field.
bool Segment::valid_batch_follows(uint64_t pos, uint64_t file_size) const {
  char len_buf[4] = {0, 0, 0, 0};
  auto n = log_->read_at(FilePosition(pos), len_buf, 4);
  if (!n.ok() || *n != 4) return false;
  const uint64_t next_pos = pos + 4 + coding::get_fixed32(len_buf);
  LogReader after(*log_, FilePosition(next_pos), file_size, kProbeChunk);
  LogBatch nb;
  return next_pos < file_size && after.next(nb);
}

}  // namespace streamd
