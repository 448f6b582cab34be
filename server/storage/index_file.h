// IndexFile: a memory-mapped array of fixed-size entries, the storage of both sparse indexes
// (offset_index.h, time_index.h). Format and validity rules: docs/FORMAT.md §"Offset index".
//
// While its segment is active the file is zero-filled ahead of its entries and grows as they arrive:
// one page first, then fourfold, up to the entries the segment can ever need, so a segment written
// once costs a page and not its whole capacity. It is cut to exactly count() entries when sealed.
// Entries are derived data: they are written without syncing, and recovery rebuilds whatever does not
// validate. One writer appends; readers may call count() and read() concurrently: an entry is fully
// written before count() publishes it. A growth maps the longer file anew and keeps the earlier
// mappings until the file is closed, so a reader still holding an earlier one reads valid memory:
// every mapping shows the same pages of the file.
//
// A page of the mapping the disk cannot return raises SIGBUS when touched; every access a serving
// broker makes goes through mapping_guard.h, so such a page makes that access fail instead (the
// caller falls back to scanning the log, or the index stays sparser) and never ends the process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/storage/file_system.h"
#include "server/storage/status.h"

namespace streamd {

class IndexFile {
 public:
  static constexpr size_t kEntrySize = 12;

  // Entries of the first growth: one page of the file.
  static constexpr size_t kFirstGrowth = 4096 / kEntrySize;

  // Opens (creating when missing) and maps the file with room for `capacity` entries, zero-filling it
  // when it is shorter; a larger existing file is mapped whole. Appends past that grow the file up to
  // `grows_to` entries. count() starts at 0: the owner validates and calls set_count().
  static Result<std::unique_ptr<IndexFile>> open(FileSystem& fs, const std::string& path, size_t capacity,
                                                 size_t grows_to = 0);

  size_t count() const { return count_.load(std::memory_order_acquire); }
  // Entries the file holds now (zeros past count()), all of them mapped: what validation may read.
  size_t capacity() const { return capacity_; }
  // Entry i in place, unguarded: only for recovery's validation, which runs right after readable().
  const char* entry(size_t i) const { return data_.load(std::memory_order_acquire) + i * kEntrySize; }
  // Copies entry i to out; false when its page could not be read.
  bool read(size_t i, char (&out)[kEntrySize]) const;
  // Whether every page of the mapping can be read now (each is touched once).
  bool readable() const;
  // Publishes entries [0, n). Entries at and past n are zeroed when `zero_rest` (where the pages can be
  // written: entries past count() are never read as entries, and recovery rebuilds a dirty tail).
  void set_count(size_t n, bool zero_rest);
  // Appends one raw entry, growing the file when it is full and may grow; false when it cannot (at
  // `grows_to`, the disk refused the growth, or the page could not be written): the index simply stays
  // sparser.
  bool append(const char (&raw)[kEntrySize]);
  // Makes the file exactly count() entries long and durable: the segment is closed.
  Status seal();
  const std::string& path() const { return file_->path(); }

 private:
  IndexFile(std::unique_ptr<File> file, size_t grows_to) : file_(std::move(file)), grows_to_(grows_to) {}
  // Zero-fills the file to `entries` and maps it whole, the new mapping becoming the one entries use.
  Status extend_to(size_t entries);
  char* mutable_entry(size_t i) { return data_.load(std::memory_order_relaxed) + i * kEntrySize; }

  std::unique_ptr<File> file_;
  const size_t grows_to_;
  std::vector<std::unique_ptr<MappedRegion>> regions_;  // the last is current; earlier ones for readers
  std::atomic<char*> data_{nullptr};
  size_t capacity_ = 0;
  std::atomic<size_t> count_{0};
};

}  // namespace streamd
