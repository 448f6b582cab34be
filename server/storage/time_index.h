// TimeIndex: the time index of one segment — append instant → relative offset of the batch appended
// then (docs/FORMAT.md §"Time index"). Because a partition's instants never decrease, an entry is added
// only when the instant grows, so both fields strictly increase; sealing a segment adds its last batch,
// so the last entry of a closed segment carries the segment's newest instant (what retention reads).
// Thread-safety: as IndexFile (one writer, concurrent readers).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "server/storage/index_file.h"
#include "server/storage/types.h"

namespace streamd {

struct TimeIndexEntry {
  Timestamp time;
  RelativeOffset relative;
  bool operator==(const TimeIndexEntry&) const = default;
};

class TimeIndex {
 public:
  // As IndexFile::open: room for `capacity` entries now, growing as entries arrive up to `grows_to`.
  static Result<std::unique_ptr<TimeIndex>> open(FileSystem& fs, const std::string& path, size_t capacity,
                                                 size_t grows_to = 0);

  // As OffsetIndex::valid_prefix; entries must also point below `end_relative` (the segment's end).
  size_t valid_prefix(uint64_t end_relative, bool& clean_tail) const;
  void set_count(size_t n) { file_->set_count(n, true); }
  size_t count() const { return file_->count(); }
  size_t capacity() const { return file_->capacity(); }
  // Entry i, unguarded (index_file.h): for recovery, after readable().
  TimeIndexEntry at(size_t i) const;
  bool readable() const { return file_->readable(); }
  // Adds an entry when `time` is newer than the last one; older or equal instants are already covered.
  // Nothing is added when the last entry cannot be read.
  void maybe_append(TimeIndexEntry e);
  // The last entry whose time is strictly before t; nullopt when none is, or when an entry it needed
  // could not be read (the caller then scans from the segment's start).
  std::optional<TimeIndexEntry> last_before(Timestamp t) const;
  // The first and the last entries; nullopt when there are none or the entry could not be read.
  std::optional<TimeIndexEntry> first() const;
  std::optional<TimeIndexEntry> last() const;
  Status seal() { return file_->seal(); }

 private:
  explicit TimeIndex(std::unique_ptr<IndexFile> file) : file_(std::move(file)) {}
  // Entry i through the guard; nullopt when it could not be read.
  std::optional<TimeIndexEntry> read(size_t i) const;
  std::unique_ptr<IndexFile> file_;
};

}  // namespace streamd
