// Segment: one log file of a partition plus its two sparse indexes, named by base offset
// (00000000000000000000.log / .index / .timeindex). Format: docs/FORMAT.md.
//
// The log is zero-filled ahead of the writer (writes into already-written blocks are synced without a
// journal commit), so its file is longer than its records; the records end at the first zero length.
// A closed (sealed) segment is exactly its records long and its indexes are cut to size.
//
// Offsets that mean different things are kept apart: the writer's `written` end and size include
// batches not yet synced; the `committed` size and end are what readers may see, advanced by publish()
// after the sync covering them.
//
// Thread-safety: one writer at a time (append, sync, publish, seal); any number of concurrent readers
// (read, offset_at, last_batch, scan) that never look past the committed size.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/storage/durable_write.h"
#include "server/storage/file_system.h"
#include "server/storage/log_reader.h"
#include "server/storage/offset_index.h"
#include "server/storage/read_result.h"
#include "server/storage/record_batch.h"
#include "server/storage/segment_info.h"
#include "server/storage/time_index.h"
#include "server/storage/types.h"

namespace streamd {

struct SegmentOptions {
  uint64_t segment_bytes = 64ull << 20;  // the partition rolls a segment that would grow past this
  uint32_t index_interval_bytes = 4096;
  uint64_t preallocate_bytes = 4ull << 20;

  // Index entries a log of `log_bytes` can need: one per interval, plus the first and the seal's.
  size_t index_capacity(uint64_t log_bytes) const { return static_cast<size_t>(log_bytes / index_interval_bytes + 2); }
};

// What opening a segment found and did, for the partition's recovery log line.
struct SegmentRecovery {
  bool truncated = false;      // records ended before the file did (torn tail or damage)
  bool corruption = false;     // a bad batch was followed by a valid one: damage, not a torn write
  bool index_rebuilt = false;  // index entries were dropped and re-derived from the log
  bool index_unreadable = false;  // the disk could not return an index's pages: made anew from the log
  uint64_t truncated_at = 0;
  uint64_t dropped_bytes = 0;
  std::string reason;
};

// Whether an opened segment takes appends (the partition's last) or is closed.
enum class SegmentRole { kActive, kClosed };
// How the partition was last closed: after a clean close the log's length is its file's and only what
// follows the last index entry is scanned; otherwise a closed segment is scanned from its last valid
// index entry (it was synced whole when sealed) and the active one from its first byte.
enum class PriorClose { kClean, kUnknown };

class Segment {
 public:
  static std::string file_stem(Offset base);  // 20 zero-padded decimal digits
  static std::optional<Offset> parse_log_name(const std::string& name);

  // Creates an empty segment (its files must not exist). When that fails (a full disk) the files it
  // made are removed again, so that a later create of the same base can succeed.
  static Result<std::shared_ptr<Segment>> create(FileSystem& fs, const std::string& dir, Offset base,
                                                 const SegmentOptions& options);
  // Opens an existing segment and recovers it (segment_recovery.cc): unless `prior` is kClean, a bad
  // tail is truncated and stale index entries are re-derived. A kClosed segment is left exact (sealed).
  static Result<std::shared_ptr<Segment>> open(FileSystem& fs, const std::string& dir, Offset base,
                                               const SegmentOptions& options, SegmentRole role, PriorClose prior,
                                               SegmentRecovery& recovery);
  ~Segment();

  Offset base() const { return base_; }
  // The size the segment was begun (or opened) with: its indexes are sized for a log this long.
  uint64_t segment_bytes() const { return options_.segment_bytes; }
  // Reader view.
  uint64_t committed_size() const { return committed_size_.load(std::memory_order_acquire); }
  Offset committed_end() const { return Offset(committed_end_.load(std::memory_order_acquire)); }
  Timestamp max_time() const { return Timestamp(max_time_.load(std::memory_order_acquire)); }
  // The first batch's instant: the time index's first entry, written with the first batch.
  Timestamp min_time() const;
  SegmentInfo info(bool active) const;
  // Writer view.
  uint64_t written_size() const { return written_size_; }
  Offset written_end() const { return written_end_; }
  // What makes a write durable, which decides whether zeros are written ahead of it (durable_write.h).
  enum class Durability {
    kOwnSync,  // the segment's own sync, next: zero-filled space keeps that sync from changing the size
    // The journal's sync; the segment's waits for a checkpoint, which pays one size change for all the
    // writes since. So a segment smaller than the first zero-fill window grows without zeros: a
    // partition written a few times costs its records, and its first write no window of zeros.
    kJournal,
  };

  // Whether `bytes` more, made durable by the journal, need no zeros written first and nothing synced
  // first (no seal, no roll).
  bool takes_journaled(uint64_t bytes) const;

  // Writes whole sealed batches, laid end to end in the order given (each piece holds one or more),
  // and indexes them. Not yet durable.
  Status append(std::span<const std::string_view> pieces, Durability durability = Durability::kOwnSync);
  Status append(std::string_view batches) { return append(std::span<const std::string_view>(&batches, 1)); }
  Status sync();
  // Makes everything written so far visible to readers. Call only after a successful sync().
  void publish();
  // After an append failed for want of space: cuts the log back to the end of the last whole append
  // and syncs that, so the segment takes appends again where it stood (durable_write.h).
  Status discard_unwritten();
  // Closes the segment for writing: cuts the log and indexes to size and syncs them. Once it succeeded
  // the segment takes no more appends (its indexes are no longer mapped to capacity) and a second call
  // does nothing.
  Status seal();
  // Any thread may ask: a sealed segment's log is synced whole (the journal's checkpoint skips it).
  bool sealed() const { return sealed_.load(std::memory_order_acquire); }

  // Entries with offset >= from, appended to `out` within the remaining limits; updates out.next_from.
  // ReadShape::kBatches takes a version 2 batch that starts at or after `from` as one entry
  // (read_result.h) when it fits the limits whole, counting its record region against the bytes.
  Status read(Offset from, uint32_t& records_left, uint64_t& bytes_left, ReadResult& out,
              ReadShape shape = ReadShape::kRecords) const;
  // The first batch base offset whose appended_at >= t, or nullopt when every batch is older.
  Result<std::optional<Offset>> offset_at(Timestamp t) const;
  // The segment's last record, appended to `out`; nothing when the segment holds none.
  Status last_record(ReadResult& out) const;
  // Visits every committed batch in order; stop early by returning false.
  Status scan(const std::function<bool(const LogBatch&)>& visit) const;

  // Records whether the last read of this segment failed and returns what the one before left: the
  // partition logs a segment whose reads start failing, and start working again, once each, not once
  // per read of a reader that retries.
  bool note_read_failing(bool failing) const;

  // Unlinks the files; readers holding this segment keep reading through their open descriptors.
  Status remove_files();
  std::string log_path() const;
  std::string offset_index_path() const;
  std::string time_index_path() const;
  size_t offset_index_entries() const { return offset_index_->count(); }
  size_t time_index_entries() const { return time_index_->count(); }

 private:
  Segment(FileSystem& fs, std::string dir, Offset base, SegmentOptions options);
  // Recovery's steps, in order (segment_recovery.cc).
  struct ScanStart;
  Status recover(SegmentRole role, PriorClose prior, SegmentRecovery& recovery);
  Status replace_unreadable_indexes(SegmentRole role, uint64_t file_size, SegmentRecovery& recovery);
  ScanStart keep_offset_index(uint64_t file_size, PriorClose prior, SegmentRecovery& recovery);
  ScanStart forget_offset_index(uint64_t file_size, std::vector<OffsetIndexEntry>& found);
  bool offset_index_holds(const std::vector<OffsetIndexEntry>& entries) const;
  // Returns how many entries obeyed the format; `last` receives the last of them.
  size_t keep_time_index(const ScanStart& start, PriorClose prior, SegmentRecovery& recovery,
                         std::vector<TimeIndexEntry>& unverified);
  Status scan_records(const ScanStart& start, uint64_t file_size, const std::vector<TimeIndexEntry>& unverified,
                      SegmentRecovery& recovery, BatchCheck& stop, std::string& stop_reason);
  Status settle_tail(uint64_t file_size, SegmentRole role, BatchCheck stop, const std::string& stop_reason,
                     SegmentRecovery& recovery);
  Result<bool> only_zeros_from(uint64_t pos, uint64_t file_size) const;
  bool valid_batch_follows(uint64_t pos, uint64_t file_size) const;
  Status map_indexes(size_t capacity, size_t grows_to);
  // Maps the index files as they are (created empty when missing) for a segment of `role` whose log
  // holds `log_bytes`: what opening a segment, and replacing unreadable indexes, start from.
  Status map_indexes_as_found(SegmentRole role, uint64_t log_bytes);
  Status grow_indexes(uint64_t log_bytes);
  // Whether a batch at `position` gets index entries (one per interval).
  bool indexes(FilePosition position) const;
  void index_batch(const BatchHeader& header, FilePosition position);
  FilePosition start_position(Offset from) const;
  // How many log bytes a read with these limits left is likely to need next (one pread's size).
  size_t read_chunk_bytes(uint32_t records_left, uint64_t bytes_left) const;

  FileSystem& fs_;
  const std::string dir_;
  const Offset base_;
  const SegmentOptions options_;
  std::unique_ptr<File> log_;
  std::unique_ptr<OffsetIndex> offset_index_;
  std::unique_ptr<TimeIndex> time_index_;

  // Writer state.
  uint64_t written_size_ = 0;
  Offset written_end_;
  Timestamp written_max_time_;
  // Whether a journaled write ending at `end` goes past the zeros without filling (kJournal).
  bool grows_unfilled(uint64_t end) const;

  ZeroFillAhead zero_fill_;        // the log file holds zeros from written_size_ up to its end()
  uint64_t last_indexed_pos_ = 0;  // position of the last offset-index entry
  bool any_indexed_ = false;
  std::atomic<bool> sealed_{false};

  // Reader state.
  std::atomic<uint64_t> committed_size_{0};
  std::atomic<uint64_t> committed_end_{0};
  std::atomic<int64_t> max_time_{0};
  mutable std::atomic<bool> read_failing_{false};
};

}  // namespace streamd
