#include "server/storage/time_index.h"

#include "server/storage/coding.h"

namespace streamd {
namespace {

TimeIndexEntry decode_time_entry(const char* p) {
  return {Timestamp(static_cast<int64_t>(coding::get_fixed64(p))), RelativeOffset(coding::get_fixed32(p + 8))};
}

}  // namespace

Result<std::unique_ptr<TimeIndex>> TimeIndex::open(FileSystem& fs, const std::string& path, size_t capacity,
                                                 size_t grows_to) {
  auto file = IndexFile::open(fs, path, capacity, grows_to);
  if (!file.ok()) return file.status();
  return std::unique_ptr<TimeIndex>(new TimeIndex(std::move(*file)));
}

size_t TimeIndex::valid_prefix(uint64_t end_relative, bool& clean_tail) const {
  size_t n = 0;
  const size_t cap = file_->capacity();
  for (; n < cap; ++n) {
    TimeIndexEntry e = decode_time_entry(file_->entry(n));
    if (e.time.micros == 0 || e.relative.value >= end_relative) break;
    if (n > 0) {
      TimeIndexEntry prev = decode_time_entry(file_->entry(n - 1));
      if (e.time <= prev.time || e.relative <= prev.relative) break;
    }
  }
  clean_tail = true;
  for (size_t i = n * IndexFile::kEntrySize; i < cap * IndexFile::kEntrySize; ++i) {
    if (file_->entry(0)[i] != 0) {
      clean_tail = false;
      break;
    }
  }
  return n;
}

TimeIndexEntry TimeIndex::at(size_t i) const { return decode_time_entry(file_->entry(i)); }

std::optional<TimeIndexEntry> TimeIndex::read(size_t i) const {
  char raw[IndexFile::kEntrySize];
  if (!file_->read(i, raw)) return std::nullopt;
  return decode_time_entry(raw);
}

void TimeIndex::maybe_append(TimeIndexEntry e) {
  size_t n = count();
  if (n > 0) {
    std::optional<TimeIndexEntry> prev = read(n - 1);
    if (!prev || e.time <= prev->time || e.relative <= prev->relative) return;
  }
  char raw[IndexFile::kEntrySize];
  coding::put_fixed64(raw, static_cast<uint64_t>(e.time.micros));
  coding::put_fixed32(raw + 8, e.relative.value);
  file_->append(raw);
}

std::optional<TimeIndexEntry> TimeIndex::last_before(Timestamp t) const {
  size_t lo = 0, hi = count();  // first entry with time >= t
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    std::optional<TimeIndexEntry> e = read(mid);
    if (!e) return std::nullopt;
    if (e->time < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  return read(lo - 1);
}

std::optional<TimeIndexEntry> TimeIndex::first() const {
  if (count() == 0) return std::nullopt;
  return read(0);
}

std::optional<TimeIndexEntry> TimeIndex::last() const {
  size_t n = count();
  if (n == 0) return std::nullopt;
  return read(n - 1);
}

}  // namespace streamd
