#include "server/storage/index_file.h"

#include <algorithm>
#include <cstring>

#include "server/storage/durable_write.h"
#include "server/storage/mapping_guard.h"

namespace streamd {

Result<std::unique_ptr<IndexFile>> IndexFile::open(FileSystem& fs, const std::string& path, size_t capacity,
                                                   size_t grows_to) {
  auto file = fs.open(path, OpenMode::kCreate);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  std::unique_ptr<IndexFile> index(new IndexFile(std::move(*file), grows_to));
  STREAMD_RETURN_IF_ERROR(index->extend_to(std::max(capacity, static_cast<size_t>(*size / kEntrySize))));
  return index;
}

Status IndexFile::extend_to(size_t entries) {
  auto size = file_->size();
  if (!size.ok()) return size.status();
  const uint64_t want = entries * kEntrySize;
  if (*size < want) {
    // Written, not ftruncated: entries are stored through the mapping, and a store into a hole the
    // disk has no room for would end the process with SIGBUS instead of failing a write. A torn last
    // entry is overwritten from its start.
    STREAMD_RETURN_IF_ERROR(write_zeros(*file_, *size - *size % kEntrySize, want));
  }
  auto region = file_->map(static_cast<size_t>(want));
  if (!region.ok()) return region.status();
  data_.store((*region)->data(), std::memory_order_release);
  regions_.push_back(std::move(*region));
  capacity_ = entries;
  return Status();
}

bool IndexFile::read(size_t i, char (&out)[kEntrySize]) const {
  const char* from = entry(i);
  return guard_mapping([&] { std::memcpy(out, from, kEntrySize); });
}

bool IndexFile::readable() const {
  const char* base = entry(0);
  const size_t bytes = capacity_ * kEntrySize;
  return guard_mapping([&] {
    for (size_t at = 0; at < bytes; at += 4096) static_cast<void>(*static_cast<const volatile char*>(base + at));
  });
}

void IndexFile::set_count(size_t n, bool zero_rest) {
  if (zero_rest && n < capacity()) {
    char* from = mutable_entry(n);
    const size_t bytes = (capacity() - n) * kEntrySize;
    guard_mapping([&] { std::memset(from, 0, bytes); });
  }
  count_.store(n, std::memory_order_release);
}

bool IndexFile::append(const char (&raw)[kEntrySize]) {
  size_t n = count_.load(std::memory_order_relaxed);
  if (n >= capacity_) {
    if (capacity_ >= grows_to_) return false;
    if (!extend_to(std::min(grows_to_, std::max(kFirstGrowth, capacity_ * 4))).ok()) return false;
  }
  char* to = mutable_entry(n);
  if (!guard_mapping([&] { std::memcpy(to, raw, kEntrySize); })) return false;
  count_.store(n + 1, std::memory_order_release);
  return true;
}

Status IndexFile::seal() {
  if (!regions_.empty()) STREAMD_RETURN_IF_ERROR(regions_.back()->sync());
  STREAMD_RETURN_IF_ERROR(file_->truncate(count() * kEntrySize));
  return file_->sync();
}

}  // namespace streamd
