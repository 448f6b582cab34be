#include "server/storage/index_file.h"

#include <cstring>

#include "server/storage/durable_write.h"

namespace streamd {

Result<std::unique_ptr<IndexFile>> IndexFile::open(FileSystem& fs, const std::string& path, size_t capacity) {
  auto file = fs.open(path, OpenMode::kCreate);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  uint64_t want = capacity * kEntrySize;
  uint64_t bytes = *size - *size % kEntrySize;
  if (bytes < want) {
    // Written, not ftruncated: entries are stored through the mapping, and a store into a hole the
    // disk has no room for would end the process with SIGBUS instead of failing a write.
    STREAMD_RETURN_IF_ERROR((*file)->truncate(bytes));
    STREAMD_RETURN_IF_ERROR(write_zeros(**file, bytes, want));
    bytes = want;
  }
  auto region = (*file)->map(static_cast<size_t>(bytes));
  if (!region.ok()) return region.status();
  return std::unique_ptr<IndexFile>(new IndexFile(std::move(*file), std::move(*region)));
}

void IndexFile::set_count(size_t n, bool zero_rest) {
  if (zero_rest && n < capacity()) std::memset(mutable_entry(n), 0, (capacity() - n) * kEntrySize);
  count_.store(n, std::memory_order_release);
}

bool IndexFile::append(const char (&raw)[kEntrySize]) {
  size_t n = count_.load(std::memory_order_relaxed);
  if (n >= capacity()) return false;
  std::memcpy(mutable_entry(n), raw, kEntrySize);
  count_.store(n + 1, std::memory_order_release);
  return true;
}

Status IndexFile::seal() {
  STREAMD_RETURN_IF_ERROR(region_->sync());
  STREAMD_RETURN_IF_ERROR(file_->truncate(count() * kEntrySize));
  return file_->sync();
}

}  // namespace streamd
