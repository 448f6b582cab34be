// IndexFile: a memory-mapped array of fixed-size entries, the storage of both sparse indexes
// (offset_index.h, time_index.h). Format and validity rules: docs/FORMAT.md §"Offset index".
//
// The file is preallocated (zero-filled) to `capacity` entries while its segment is active and cut to
// exactly count() entries when sealed. Entries are derived data: they are written without syncing, and
// recovery rebuilds whatever does not validate. One writer appends; readers may call count() and
// entry() concurrently: an entry is fully written before count() publishes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "server/storage/file_system.h"
#include "server/storage/status.h"

namespace streamd {

class IndexFile {
 public:
  static constexpr size_t kEntrySize = 12;

  // Opens (creating when missing) and maps the file with room for `capacity` entries; a larger existing
  // file is mapped whole. count() starts at 0: the owner validates and calls set_count().
  static Result<std::unique_ptr<IndexFile>> open(FileSystem& fs, const std::string& path, size_t capacity);

  size_t count() const { return count_.load(std::memory_order_acquire); }
  size_t capacity() const { return region_->size() / kEntrySize; }
  // Entries physically present in the file (mapped length / entry size), for validation.
  const char* entry(size_t i) const { return region_->data() + i * kEntrySize; }
  char* mutable_entry(size_t i) { return region_->data() + i * kEntrySize; }
  // Publishes entries [0, n). Entries at and past n are zeroed when `zero_rest`.
  void set_count(size_t n, bool zero_rest);
  // Appends one raw entry if there is room; false when full (the index simply stays sparser).
  bool append(const char (&raw)[kEntrySize]);
  // Makes the file exactly count() entries long and durable: the segment is closed.
  Status seal();
  const std::string& path() const { return file_->path(); }

 private:
  IndexFile(std::unique_ptr<File> file, std::unique_ptr<MappedRegion> region)
      : file_(std::move(file)), region_(std::move(region)) {}
  std::unique_ptr<File> file_;
  std::unique_ptr<MappedRegion> region_;
  std::atomic<size_t> count_{0};
};

}  // namespace streamd
