#include "server/storage/create_time_lookup.h"

#include <algorithm>
#include <vector>

#include "server/storage/record_reader.h"

namespace streamd {
namespace {

constexpr uint32_t kTailRecords = 4096;
constexpr uint64_t kTailBytes = 4 << 20;

int64_t millis_of(Timestamp appended_at) {
  return appended_at.micros / 1000;
}

int64_t record_millis(const RecordView& r, Timestamp appended_at) {
  return r.create_time ? r.create_time->millis : millis_of(appended_at);
}

}  // namespace

std::optional<CreateTimeLookup::Walked> CreateTimeLookup::walked(Offset base, uint64_t bytes) {
  std::lock_guard lock(mu_);
  auto it = closed_.find(base.value);
  if (it == closed_.end() || it->second.bytes != bytes) return std::nullopt;
  return it->second;
}

void CreateTimeLookup::remember(Offset base, Walked w, const std::vector<SegmentInfo>& live) {
  std::lock_guard lock(mu_);
  closed_[base.value] = w;
  // Segments retention removed are forgotten with them.
  for (auto it = closed_.begin(); it != closed_.end();) {
    const bool present = std::any_of(live.begin(), live.end(),
                                     [&](const SegmentInfo& s) { return s.base.value == it->first; });
    it = present ? std::next(it) : closed_.erase(it);
  }
}

Result<std::optional<TimedOffset>> CreateTimeLookup::find(const SegmentedLog& log, CreateTime t) {
  const Bounds b = log.bounds();
  if (b.first == b.next) return std::optional<TimedOffset>();
  const std::vector<SegmentInfo> segments = log.segments();
  Offset tail_from = b.first;
  for (const SegmentInfo& seg : segments) {
    if (seg.active) break;
    tail_from = std::max(tail_from, seg.end);
    if (seg.end <= b.first) continue;
    if (auto known = walked(seg.base, seg.bytes); known && (!known->any || known->max_millis < t.millis))
      continue;
    std::optional<TimedOffset> found;
    Walked whole{seg.bytes, 0, false};
    Status damaged;
    Status scanned = log.scan_segment(seg.base, [&](const BatchHeader& h, std::string_view batch) {
      if (h.record_count == 0) return true;
      const int64_t batch_max = h.max_record_millis();
      whole.max_millis = whole.any ? std::max(whole.max_millis, batch_max) : batch_max;
      whole.any = true;
      if (h.end_offset() <= b.first || batch_max < t.millis) return true;
      RecordReader records(batch);
      RecordView r;
      while (records.next(r)) {
        if (r.offset < b.first) continue;
        const int64_t ts = record_millis(r, h.appended_at);
        if (ts >= t.millis) {
          found = TimedOffset{r.offset, ts};
          return false;
        }
      }
      if (records.error()) {
        damaged = Status(Code::kStreamBackendFailed, "a batch's records do not parse during a time lookup",
                         {{"path", log.dir()}, {"base", h.base_offset.str()}, {"reason", records.reason()}});
        return false;
      }
      // Records below first held the batch's largest time: the lookup goes on.
      return true;
    });
    if (!scanned.ok()) {
      // Retention or a trim removed the segment meanwhile: its records are no longer retained.
      if (!has_closed_segment(log, seg.base)) continue;
      return scanned;
    }
    if (!damaged.ok()) return damaged;
    if (found) return found;
    remember(seg.base, whole, segments);
  }
  // The active segment, through reads: it grows while the lookup runs, and is at most one segment.
  Offset from = tail_from;
  while (from < b.next) {
    auto read = log.read(from, kTailRecords, kTailBytes);
    if (!read.ok()) {
      if (read.status().code() != Code::kOffsetTrimmed) return read.status();
      from = log.bounds().first;  // a trim raised first meanwhile
      continue;
    }
    for (const EntryView& e : read->entries) {
      if (e.offset >= b.next) break;
      const int64_t ts = record_millis(e, e.appended_at);
      if (ts >= t.millis) return std::optional<TimedOffset>(TimedOffset{e.offset, ts});
    }
    if (read->next_from <= from) break;
    from = read->next_from;
  }
  return std::optional<TimedOffset>();
}

}  // namespace streamd
