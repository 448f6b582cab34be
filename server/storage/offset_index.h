// OffsetIndex: the sparse offset index of one segment — relative offset → log file position of the
// batch starting there, one entry per ~index_interval_bytes of log (docs/FORMAT.md §"Offset index").
// Entries strictly increase in both fields; the first, when any, is the segment's first batch at 0.
// Thread-safety: as IndexFile (one writer, concurrent readers).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "server/storage/index_file.h"
#include "server/storage/types.h"

namespace streamd {

struct OffsetIndexEntry {
  RelativeOffset relative;
  FilePosition position;
  bool operator==(const OffsetIndexEntry&) const = default;
};

class OffsetIndex {
 public:
  // As IndexFile::open: room for `capacity` entries now, growing as entries arrive up to `grows_to`.
  static Result<std::unique_ptr<OffsetIndex>> open(FileSystem& fs, const std::string& path, size_t capacity,
                                                 size_t grows_to = 0);

  // Length of the longest prefix of the file's entries that obeys the format's rules with positions
  // below log_size; `clean_tail` is false when non-zero bytes follow that prefix (a stale or damaged file).
  size_t valid_prefix(uint64_t log_size, bool& clean_tail) const;
  void set_count(size_t n) { file_->set_count(n, true); }
  size_t count() const { return file_->count(); }
  size_t capacity() const { return file_->capacity(); }
  // Entry i, unguarded (index_file.h): for recovery, after readable().
  OffsetIndexEntry at(size_t i) const;
  bool readable() const { return file_->readable(); }
  void append(OffsetIndexEntry e);
  // The last entry at or before `target`; nullopt when none is, or when an entry it needed could not be
  // read: either way the caller scans the log from the segment's start.
  std::optional<OffsetIndexEntry> floor(RelativeOffset target) const;
  // The last entry; nullopt when there is none or it could not be read.
  std::optional<OffsetIndexEntry> last() const;
  Status seal() { return file_->seal(); }

 private:
  explicit OffsetIndex(std::unique_ptr<IndexFile> file) : file_(std::move(file)) {}
  // Entry i through the guard; nullopt when it could not be read.
  std::optional<OffsetIndexEntry> read(size_t i) const;
  std::unique_ptr<IndexFile> file_;
};

}  // namespace streamd
