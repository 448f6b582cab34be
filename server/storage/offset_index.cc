#include "server/storage/offset_index.h"

#include "server/storage/coding.h"

namespace streamd {
namespace {

OffsetIndexEntry decode_offset_entry(const char* p) {
  return {RelativeOffset(coding::get_fixed32(p)), FilePosition(coding::get_fixed64(p + 4))};
}

bool all_zero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<OffsetIndex>> OffsetIndex::open(FileSystem& fs, const std::string& path, size_t capacity,
                                                 size_t grows_to) {
  auto file = IndexFile::open(fs, path, capacity, grows_to);
  if (!file.ok()) return file.status();
  return std::unique_ptr<OffsetIndex>(new OffsetIndex(std::move(*file)));
}

size_t OffsetIndex::valid_prefix(uint64_t log_size, bool& clean_tail) const {
  size_t n = 0;
  const size_t cap = file_->capacity();
  if (log_size > 0) {
    for (; n < cap; ++n) {
      OffsetIndexEntry e = decode_offset_entry(file_->entry(n));
      if (e.position.value >= log_size) break;
      if (n == 0) {
        if (e.position.value != 0) break;
      } else {
        OffsetIndexEntry prev = decode_offset_entry(file_->entry(n - 1));
        if (e.position <= prev.position || e.relative <= prev.relative) break;
      }
    }
  }
  clean_tail = all_zero(file_->entry(0) + n * IndexFile::kEntrySize, (cap - n) * IndexFile::kEntrySize);
  // A zero entry right after the prefix is preallocated space, unless it is the first entry of a
  // non-empty log, which the rules above already accepted.
  return n;
}

OffsetIndexEntry OffsetIndex::at(size_t i) const { return decode_offset_entry(file_->entry(i)); }

std::optional<OffsetIndexEntry> OffsetIndex::read(size_t i) const {
  char raw[IndexFile::kEntrySize];
  if (!file_->read(i, raw)) return std::nullopt;
  return decode_offset_entry(raw);
}

void OffsetIndex::append(OffsetIndexEntry e) {
  char raw[IndexFile::kEntrySize];
  coding::put_fixed32(raw, e.relative.value);
  coding::put_fixed64(raw + 4, e.position.value);
  file_->append(raw);
}

std::optional<OffsetIndexEntry> OffsetIndex::floor(RelativeOffset target) const {
  size_t lo = 0, hi = count();  // find the first entry with relative > target
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    std::optional<OffsetIndexEntry> e = read(mid);
    if (!e) return std::nullopt;
    if (e->relative <= target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  return read(lo - 1);
}

std::optional<OffsetIndexEntry> OffsetIndex::last() const {
  const size_t n = count();
  if (n == 0) return std::nullopt;
  return read(n - 1);
}

}  // namespace streamd
