// PartitionLog's readers: bounds, reads, time lookups, peek and the segment listing. They run on any
// thread, on a snapshot of the segment list, and never look past the synced end.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/storage/partition_log.h"
#include "server/storage/segment.h"

namespace streamd {

namespace {

// A read error is not a lost write: it fails that read only, and the partition is not fenced. It is
// logged when a segment's reads start failing and when they work again, not on every retry.
void note_read(const std::string& dir, const Segment& seg, const Status& s) {
  if (!s.ok()) {
    if (!seg.note_read_failing(true)) {
      spdlog::error("partition {}: a read of segment {} failed: {}; reads meeting it fail, appends and other reads "
                    "go on", dir, seg.log_path(), s.to_string());
    }
  } else if (seg.note_read_failing(false)) {
    spdlog::info("partition {}: segment {} reads again", dir, seg.log_path());
  }
}

}  // namespace

bool PartitionLog::reads_tail(Offset from) const { return from >= active()->base(); }

Bounds PartitionLog::bounds() const {
  // next first: a trim racing in can only raise first, never above next.
  Offset next(committed_next_.load(std::memory_order_acquire));
  Offset first(first_.load(std::memory_order_acquire));
  return {std::min(first, next), next};
}

Result<ReadResult> PartitionLog::read(Offset from, uint32_t max_records, uint64_t max_bytes,
                                      ReadShape shape) const {
  const Bounds b = bounds();
  STREAMD_RETURN_IF_ERROR(check_read_start(b, from));
  ReadResult out;
  out.next_from = from;
  if (from == b.next || max_records == 0) return out;

  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    auto it = std::upper_bound(segments_.begin(), segments_.end(), from,
                               [](Offset o, const std::shared_ptr<Segment>& s) { return o < s->base(); });
    if (it != segments_.begin()) --it;
    for (; it != segments_.end(); ++it) snapshot.push_back(*it);
  }
  uint32_t records_left = max_records;
  uint64_t bytes_left = max_bytes;
  // Room for what the limits allow, assuming records of at least 64 bytes: no regrowth in the loop.
  out.entries.reserve(std::min<uint64_t>({max_records, max_bytes / 64 + 1, b.next - from}));
  for (const auto& seg : snapshot) {
    if (seg->committed_end() <= out.next_from) continue;
    Status s = seg->read(out.next_from, records_left, bytes_left, out, shape);
    note_read(dir_, *seg, s);
    STREAMD_RETURN_IF_ERROR(s);
    if (records_left == 0 || bytes_left == 0 || out.next_from >= b.next) break;
  }
  // Entries synced after `b` was taken stay for the next read, so answers never pass bounds().next.
  while (!out.entries.empty() && out.entries.back().offset >= b.next) out.entries.pop_back();
  // Nor does a batch taken whole: one reaching past next (a log whose files hold more than it
  // recovered as committed) gives its records below next instead.
  if (!out.entries.empty() && entry_end(out.entries.back()) > b.next &&
      !expand_whole_batch(out, out.entries.size() - 1, b.next)) {
    return Status(Code::kStreamBackendFailed, "a batch's records do not parse",
                  {{"partition", dir_}, {"offset", out.entries.back().offset.str()}});
  }
  if (out.next_from > b.next)
    out.next_from = out.entries.empty() ? std::max(from, b.next) : entry_end(out.entries.back());
  return out;
}

Result<Offset> PartitionLog::offset_at(Timestamp t) const {
  const Bounds b = bounds();
  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    // Instants never decrease along a partition, so the segments' newest instants are sorted.
    auto it = std::partition_point(segments_.begin(), segments_.end(),
                                   [t](const std::shared_ptr<Segment>& s) { return s->max_time() < t; });
    snapshot.assign(it, segments_.end());
  }
  for (const auto& seg : snapshot) {
    auto found = seg->offset_at(t);
    if (!found.ok()) return found.status();
    if (found->has_value()) return std::clamp(**found, b.first, b.next);
  }
  return b.next;
}

Result<std::optional<ReadResult>> PartitionLog::peek() const {
  const Bounds b = bounds();
  if (b.first == b.next) return std::optional<ReadResult>();
  // The newest segment holding a record has the last one; it is synced even if it landed after `b`.
  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    snapshot = segments_;
  }
  for (auto it = snapshot.rbegin(); it != snapshot.rend(); ++it) {
    ReadResult out;
    STREAMD_RETURN_IF_ERROR((*it)->last_record(out));
    if (out.entries.empty()) continue;
    if (out.entries.back().offset < b.first) return std::optional<ReadResult>();
    return std::optional<ReadResult>(std::move(out));
  }
  return std::optional<ReadResult>();
}

std::vector<SegmentInfo> PartitionLog::segments() const {
  std::shared_lock lock(segments_mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (size_t i = 0; i < segments_.size(); ++i) out.push_back(segments_[i]->info(i + 1 == segments_.size()));
  return out;
}

uint64_t PartitionLog::size_bytes() const {
  std::shared_lock lock(segments_mu_);
  uint64_t total = 0;
  for (const auto& s : segments_) total += s->committed_size();
  return total;
}

Status PartitionLog::scan_segment(Offset base, const BatchVisitor& visit) const {
  std::shared_ptr<Segment> seg;
  {
    std::shared_lock lock(segments_mu_);
    for (size_t i = 0; i + 1 < segments_.size(); ++i) {
      if (segments_[i]->base() == base) seg = segments_[i];
    }
  }
  if (!seg) return Status(Code::kStreamBackendFailed, "no closed segment has this base offset",
                          {{"path", dir_}, {"base", base.str()}});
  return seg->scan([&](const LogBatch& b) { return visit(b.header, b.bytes); });
}

}  // namespace streamd
