#include "server/broker/memory/memory_partition.h"

#include <algorithm>
#include <utility>

#include "server/broker/batch_entries.h"
#include "server/broker/compaction.h"
#include "server/broker/retention.h"
#include "server/storage/record_reader.h"

namespace streamd {
namespace {

// How many batches a read takes per turn of the shared lock: appends wait for at most this many copies.
constexpr size_t kBatchesPerTurn = 256;

}  // namespace

SegmentInfo MemoryPartition::Segment::info(bool active) const {
  SegmentInfo out{base, end, bytes, Timestamp(), Timestamp(), active};
  if (!batches.empty()) {
    out.min_appended_at = batches.front().appended_at;
    out.max_appended_at = batches.back().appended_at;
  }
  return out;
}

// A closed segment's replacement, collected in memory and swapped in whole.
class MemoryPartition::Rewrite final : public SegmentRewrite {
 public:
  Rewrite(MemoryPartition& log, Offset base) : log_(log), base_(base) {}

  Status add(std::string_view batch) override {
    const BatchHeader h = peek_header(batch);
    batches_.push_back({h.base_offset, h.end_offset(), h.appended_at, std::make_shared<const std::string>(batch)});
    return Status();
  }
  Status commit() override { return log_.replace_segment(base_, std::move(batches_)); }

 private:
  MemoryPartition& log_;
  const Offset base_;
  std::vector<Batch> batches_;
};

MemoryPartition::MemoryPartition(std::string name, uint64_t segment_bytes, Executor& executor, const Clock& clock,
                                 std::shared_ptr<std::atomic<uint64_t>> held,
                                 std::shared_ptr<ProducerLimits> producers)
    : name_(std::move(name)),
      segment_bytes_(segment_bytes),
      clock_(clock),
      held_(std::move(held)),
      limits_(std::move(producers)),
      producers_(limits_.get()),
      commit_(executor, Status(Code::kUnavailable, "The stream is closed", {{"path", name_}}),
              [this](std::vector<Pending>& group) { append_group(group); }) {
  segments_.push_back(Segment{});
}

MemoryPartition::~MemoryPartition() {
  close();
  held_->fetch_sub(bytes_);
}

void MemoryPartition::close() { commit_.close(); }

void MemoryPartition::append(std::string batch, AppendDone done) {
  commit_.submit(Pending{std::move(batch), std::move(done)});
}

void MemoryPartition::set_commit_listener(CommitListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void MemoryPartition::append_group(std::vector<Pending>& group) {
  std::vector<Result<AppendRange>> ranges;
  ranges.reserve(group.size());
  Offset next;
  {
    std::unique_lock lock(mu_);
    // Instants never go backwards along a partition, even when the clock does.
    const Timestamp now = std::max(clock_.now(), last_appended_at_);
    last_appended_at_ = now;
    for (Pending& p : group) {
      const BatchHeader h = peek_header(p.batch);
      // An idempotent producer's batch is checked where its offsets would be assigned, as on files.
      const ProducerStamp stamp = stamp_of(h, p.batch);
      if (stamp.idempotent()) {
        ProducerState::Check check = producers_.check(stamp, h.last_delta);
        if (check.verdict == ProducerState::Verdict::kDuplicate) {
          ranges.emplace_back(check.original);
          continue;
        }
        if (check.verdict == ProducerState::Verdict::kRefused) {
          ranges.emplace_back(std::move(check.refusal).with("path", name_));
          continue;
        }
        producers_.stage(stamp, h.last_delta, {next_, next_ + h.last_delta}, now);
      }
      const Offset base = next_;
      seal_batch(p.batch, base, now);
      Segment* active = &segments_.back();
      // A segment is rolled before a batch would grow it past segment_bytes, as on files.
      if (active->bytes > 0 && active->bytes + p.batch.size() > segment_bytes_.load(std::memory_order_relaxed)) {
        segments_.push_back(Segment{base, base, 0, {}});
        active = &segments_.back();
      }
      const uint64_t size = p.batch.size();
      next_ = base + (h.last_delta + 1ull);
      active->batches.push_back({base, next_, now, std::make_shared<const std::string>(std::move(p.batch))});
      active->end = next_;
      active->bytes += size;
      bytes_ += size;
      held_->fetch_add(size);
      ranges.push_back(AppendRange{base, base + h.last_delta});
    }
    producers_.settle(SIZE_MAX, now);  // held in memory: every batch is as durable as it gets at once
    next = next_;
  }
  {
    // Watchers before producers, as on files (server/storage/partition_log.cc).
    std::lock_guard lock(listener_mu_);
    if (listener_) listener_(next);
  }
  for (size_t i = 0; i < group.size(); ++i) group[i].done(ranges[i]);
}

Offset MemoryPartition::last_stable() const {
  // Under the lock append_group settles its group in, with the end it publishes.
  std::shared_lock lock(mu_);
  const std::optional<Offset> open = producers_.first_open();
  return open ? std::min(*open, next_) : next_;
}

Bounds MemoryPartition::bounds() const {
  std::shared_lock lock(mu_);
  return {first_, next_};
}

std::vector<MemoryPartition::Batch> MemoryPartition::batches_from(Offset from, Offset end, size_t limit) const {
  std::vector<Batch> out;
  std::shared_lock lock(mu_);
  if (from < first_) return out;  // a trim or retention passed the reader between two turns
  auto seg = std::upper_bound(segments_.begin(), segments_.end(), from,
                              [](Offset o, const Segment& s) { return o < s.base; });
  if (seg != segments_.begin()) --seg;
  for (; seg != segments_.end() && out.size() < limit; ++seg) {
    auto b = std::upper_bound(seg->batches.begin(), seg->batches.end(), from,
                              [](Offset o, const Batch& batch) { return o < batch.end; });
    for (; b != seg->batches.end() && out.size() < limit && b->base < end; ++b) out.push_back(*b);
  }
  return out;
}

Result<ReadResult> MemoryPartition::read(Offset from, uint32_t max_records, uint64_t max_bytes) const {
  return read_shaped(from, max_records, max_bytes, ReadShape::kRecords);
}

Result<ReadResult> MemoryPartition::read_batches(Offset from, uint32_t max_records,
                                                 uint64_t max_bytes) const {
  return read_shaped(from, max_records, max_bytes, ReadShape::kBatches);
}

Result<ReadResult> MemoryPartition::read_shaped(Offset from, uint32_t max_records, uint64_t max_bytes,
                                                ReadShape shape) const {
  const Bounds b = bounds();
  STREAMD_RETURN_IF_ERROR(check_read_start(b, from));
  ReadResult out;
  out.next_from = from;
  if (from == b.next || max_records == 0) return out;

  ReadBudget budget{max_records, max_bytes};
  out.entries.reserve(std::min<uint64_t>({max_records, max_bytes / 64 + 1, b.next - from}));
  while (!budget.spent() && out.next_from < b.next) {
    const std::vector<Batch> batches =
        batches_from(out.next_from, b.next, std::min<size_t>(budget.records_left, kBatchesPerTurn));
    if (batches.empty()) break;
    for (const Batch& batch : batches) {
      if (take_batch_entries(*batch.bytes, batch.appended_at, budget, out, shape))
        out.owners.push_back(batch.bytes);
      if (budget.spent()) break;
      // Past every offset of this batch, compaction's holes included.
      out.next_from = std::max(out.next_from, batch.end);
    }
  }
  return out;
}

Result<Offset> MemoryPartition::offset_at(Timestamp t) const {
  std::shared_lock lock(mu_);
  // Instants never decrease along a partition: the first batch at or after t holds the answer.
  // Only the active segment can be empty, and it is last.
  auto seg = std::partition_point(segments_.begin(), segments_.end(), [t](const Segment& s) {
    return !s.batches.empty() && s.batches.back().appended_at < t;
  });
  for (; seg != segments_.end(); ++seg) {
    auto b = std::partition_point(seg->batches.begin(), seg->batches.end(),
                                  [t](const Batch& batch) { return batch.appended_at < t; });
    if (b != seg->batches.end()) return std::clamp(b->base, first_, next_);
  }
  return next_;
}

Result<std::optional<ReadResult>> MemoryPartition::peek() const {
  std::shared_ptr<const std::string> bytes;
  Timestamp appended_at;
  Offset first;
  {
    std::shared_lock lock(mu_);
    if (first_ == next_) return std::optional<ReadResult>();
    first = first_;
    // The newest batch that still holds a record (compaction may have emptied the last ones).
    for (auto seg = segments_.rbegin(); seg != segments_.rend() && !bytes; ++seg) {
      for (auto b = seg->batches.rbegin(); b != seg->batches.rend(); ++b) {
        if (peek_header(*b->bytes).record_count == 0) continue;
        bytes = b->bytes;
        appended_at = b->appended_at;
        break;
      }
    }
  }
  if (!bytes) return std::optional<ReadResult>();
  RecordReader records(*bytes);
  RecordView r;
  std::optional<EntryView> tail;
  while (records.next(r)) tail = make_entry(r, appended_at, *bytes);
  if (!tail || tail->offset < first) return std::optional<ReadResult>();
  ReadResult out;
  out.entries.push_back(*tail);
  out.next_from = tail->offset + 1;
  out.owners.push_back(std::move(bytes));
  return std::optional<ReadResult>(std::move(out));
}

Status MemoryPartition::trim(Offset before) {
  std::unique_lock lock(mu_);
  if (before > next_) return Status::of(Code::kOffsetAhead, {{"requested", before.str()}, {"next", next_.str()}});
  if (before <= first_) return Status();
  first_ = before;
  producers_.forget_aborted_before(first_);
  return drop_front_locked([before](const SegmentInfo& info) { return info.end <= before; });
}

Status MemoryPartition::drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) {
  std::unique_lock lock(mu_);
  return drop_front_locked(drop);
}

Status MemoryPartition::drop_front_locked(const std::function<bool(const SegmentInfo&)>& drop) {
  size_t dropped = 0;
  uint64_t freed = 0;
  while (segments_.size() - dropped > 1 && drop(segments_[dropped].info(false))) freed += segments_[dropped++].bytes;
  if (dropped == 0) return Status();
  segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(dropped));
  first_ = std::max(first_, segments_.front().base);
  producers_.forget_aborted_before(first_);
  bytes_ -= freed;
  held_->fetch_sub(freed);
  return Status();
}

Status MemoryPartition::roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) {
  std::unique_lock lock(mu_);
  const Segment& active = segments_.back();
  if (active.bytes > 0 && roll(active.info(true))) segments_.push_back(Segment{next_, next_, 0, {}});
  return Status();
}

std::vector<SegmentInfo> MemoryPartition::segments() const {
  std::shared_lock lock(mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (size_t i = 0; i < segments_.size(); ++i) out.push_back(segments_[i].info(i + 1 == segments_.size()));
  return out;
}

uint64_t MemoryPartition::size_bytes() const {
  std::shared_lock lock(mu_);
  return bytes_;
}

uint32_t MemoryPartition::segment_count() const {
  std::shared_lock lock(mu_);
  return static_cast<uint32_t>(segments_.size());
}

Status MemoryPartition::no_closed_segment(Offset base) const {
  return Status(Code::kStreamBackendFailed, "no closed segment has this base offset",
                {{"path", name_}, {"base", base.str()}});
}

Status MemoryPartition::scan_segment(Offset base, const BatchVisitor& visit) const {
  std::vector<Batch> batches;
  {
    std::shared_lock lock(mu_);
    for (size_t i = 0; i + 1 < segments_.size(); ++i) {
      if (segments_[i].base == base) batches = segments_[i].batches;
    }
    if (batches.empty() && std::none_of(segments_.begin(), segments_.end() - 1,
                                        [base](const Segment& s) { return s.base == base; })) {
      return no_closed_segment(base);
    }
  }
  for (const Batch& b : batches) {
    if (!visit(peek_header(*b.bytes), *b.bytes)) break;
  }
  return Status();
}

Result<std::unique_ptr<SegmentRewrite>> MemoryPartition::rewrite_segment(Offset base) {
  return std::unique_ptr<SegmentRewrite>(std::make_unique<Rewrite>(*this, base));
}

Status MemoryPartition::replace_segment(Offset base, std::vector<Batch> batches) {
  std::unique_lock lock(mu_);
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    Segment& old = segments_[i];
    if (old.base != base) continue;
    uint64_t bytes = 0;
    for (const Batch& b : batches) bytes += b.bytes->size();
    bytes_ = bytes_ - old.bytes + bytes;
    held_->fetch_sub(old.bytes);
    held_->fetch_add(bytes);
    old.bytes = bytes;
    old.batches = std::move(batches);  // base and end stay: offsets are never renumbered
    return Status();
  }
  return no_closed_segment(base);
}

Result<uint64_t> MemoryPartition::apply_retention(const Policy& policy, Timestamp now) {
  producers_.expire(now);
  return apply_segment_retention(*this, policy, now);
}

Result<CompactionStats> MemoryPartition::compact(std::chrono::milliseconds compact_after, Timestamp now) {
  return compact_segments(*this, compact_after, now);
}

}  // namespace streamd
