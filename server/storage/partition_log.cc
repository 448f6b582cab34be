// PartitionLog: opening, the write path (group commit into the active segment) and close.
#include "server/storage/partition_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>

#include "server/storage/journal.h"
#include "server/storage/partition_files.h"
#include "server/storage/segment.h"

namespace streamd {

using namespace partition_files;

PartitionLog::PartitionLog(FileSystem& fs, std::string dir, PartitionOptions options, Executor& executor,
                           const Clock& clock)
    : fs_(fs),
      dir_(std::move(dir)),
      options_(options),
      segment_bytes_(options.segment_bytes),
      clock_(clock),
      executor_(executor),
      journal_key_(options_.journal ? options_.journal->key_for(dir_) : std::string()),
      producers_(options.producers.get()),
      // With a journal, groups are written on its thread: the journal's next record write takes them
      // there, without a hand-off to a storage thread and back.
      commit_(options_.journal ? options_.journal->executor() : executor,
              Status(Code::kUnavailable, "the partition is closed", {{"path", dir_}}),
              [this](std::vector<Pending>& group) { flush_group(group); }) {}

PartitionLog::~PartitionLog() { close(); }

SegmentOptions PartitionLog::segment_options() const {
  return {segment_bytes_.load(std::memory_order_relaxed), options_.index_interval_bytes, options_.preallocate_bytes};
}

Result<std::unique_ptr<PartitionLog>> PartitionLog::open(FileSystem& fs, std::string dir, PartitionOptions options,
                                                         Executor& executor, const Clock& clock,
                                                         DeferredDirSyncs* deferred) {
  STREAMD_RETURN_IF_ERROR(fs.create_dir(dir));
  std::unique_ptr<PartitionLog> log(new PartitionLog(fs, std::move(dir), options, executor, clock));
  bool clean = fs.exists(log->dir_ + "/" + kCleanMarker);
  STREAMD_RETURN_IF_ERROR(log->recover(clean, deferred));
  return log;
}

void PartitionLog::set_commit_listener(CommitListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void PartitionLog::append(std::string batch, AppendCallback done) {
  commit_.submit(Pending{std::move(batch), std::move(done)});
}

Status PartitionLog::failed_refusal() const {
  return Status(Code::kStreamBackendFailed, "the partition failed a write or sync and refuses appends until it is "
                "reopened", {{"path", dir_}});
}

void PartitionLog::flush_group(std::vector<Pending>& group) {
  if (options_.journal == nullptr) return flush_direct(group);
  const uint64_t bytes = group_bytes(group);
  const bool journaled = bytes <= options_.journal_group_bytes;
  if (journaled && active()->takes_journaled(bytes)) {
    // The turn lasts until the journal answers (which may come before defer(): resume() allows it).
    if (flush_journaled(group)) commit_.defer();
    return;
  }
  // On the journal's thread, which every partition waits for: a group that syncs its own segment, or
  // must first zero-fill new space or roll, does that on a storage thread.
  auto held = std::make_shared<std::vector<Pending>>(std::move(group));
  commit_.defer();
  executor_.post([this, held, journaled] {
    if (journaled && flush_journaled(*held)) return;  // the journal's answer resumes the turn
    if (!journaled) flush_direct(*held);
    commit_.resume();
  });
}

void PartitionLog::flush_direct(std::vector<Pending>& group) {
  std::vector<Result<AppendRange>> ranges;
  ranges.reserve(group.size());
  size_t durable = 0;
  Status s = write_group(group, ranges, durable, /*sync=*/true);
  answer_group(group, ranges, durable, s);
}

uint64_t PartitionLog::group_bytes(const std::vector<Pending>& group) {
  uint64_t bytes = 0;
  for (const auto& p : group) bytes += p.batch.size();
  return bytes;
}

bool PartitionLog::flush_journaled(std::vector<Pending>& group) {
  auto held = std::make_shared<JournaledGroup>();
  held->group = std::move(group);
  held->ranges.reserve(held->group.size());
  Status s = write_group(held->group, held->ranges, held->durable, /*sync=*/false);
  if (!s.ok()) {
    answer_group(held->group, held->ranges, held->durable, s);
    return false;
  }
  Journal::Entry entry;
  entry.key = journal_key_;
  // Until a record naming the directory is in the journal, each record names it: a record that failed
  // would otherwise leave the removal to no checkpoint.
  held->names_dir = marker_removal_unsynced_.load() && !marker_removal_journaled_;
  if (held->names_dir) entry.dir = dir_;
  // The batches a roll synced are durable already; refused ones and duplicates were not written.
  for (size_t i = held->durable; i < held->group.size(); ++i) {
    if (held->group[i].written) entry.batches.emplace_back(held->group[i].batch);
  }
  if (entry.batches.empty()) {
    answer_group(held->group, held->ranges, held->group.size(), Status());
    return false;
  }
  entry.segment = active();
  entry.done = [this, held](Status answer) { journal_answered(held, std::move(answer)); };
  options_.journal->submit(std::move(entry));
  return true;
}

void PartitionLog::journal_answered(const std::shared_ptr<JournaledGroup>& held, Status s) {
  if (s.ok()) {
    if (held->names_dir) marker_removal_journaled_ = true;
    active()->publish();
    answer_group(held->group, held->ranges, held->group.size(), Status());
    // The next group, when one waits, is written now, on this thread, ahead of the journal's next
    // record write.
    commit_.resume(/*run_next_here=*/true);
    return;
  }
  // The journal did not take the group: the segment's own sync makes it durable, as without a journal.
  // Not on the journal's thread, which every partition waits for.
  executor_.post([this, held] {
    std::shared_ptr<Segment> seg = active();
    Status synced = drop_clean_marker(/*durable=*/true);
    if (synced.ok()) synced = seg->sync();
    if (synced.ok()) seg->publish();
    answer_group(held->group, held->ranges, synced.ok() ? held->group.size() : held->durable, synced);
    commit_.resume();
  });
}

void PartitionLog::answer_group(std::vector<Pending>& group, const std::vector<Result<AppendRange>>& ranges,
                                size_t durable, const Status& s) {
  CommitListener listener;
  {
    std::lock_guard lock(listener_mu_);
    listener = listener_;
  }
  if (s.ok()) {
    producers_.settle(staged_in(group, group.size()), clock_.now());
    committed_next_.store(written_next_.value, std::memory_order_release);
    if (out_of_space_.exchange(false, std::memory_order_relaxed)) {
      spdlog::info("partition {}: space returned; appends are taken again", dir_);
    }
    // Watchers first: whoever hears of an append from its producer and then watches is never woken
    // by this commit as if it were a later one.
    if (listener) listener(written_next_);
    for (size_t i = 0; i < group.size(); ++i) group[i].done(ranges[i]);
    return;
  }
  // The batches before a roll were synced and published before it failed: they are acknowledged.
  producers_.settle(staged_in(group, durable), clock_.now());
  const Status refusal = settle_failed_write(s);
  if (durable > 0 && listener) listener(Offset(committed_next_.load(std::memory_order_acquire)));
  for (size_t i = 0; i < durable; ++i) group[i].done(ranges[i]);
  for (size_t i = durable; i < group.size(); ++i) group[i].done(refusal);
}

Status PartitionLog::settle_failed_write(const Status& s) {
  if (s.out_of_space()) {
    // A write found no room; what was synced before it is intact. Cut the unfinished write away and
    // take appends again from where the log stood: the next group tries again, and succeeds once
    // space is freed (a trim, a delete, retention, or the operator).
    std::shared_ptr<Segment> seg = active();
    Status cut = seg->sealed() ? Status() : seg->discard_unwritten();
    if (cut.ok()) {
      written_next_ = seg->written_end();
      if (!out_of_space_.exchange(true, std::memory_order_relaxed)) {
        spdlog::warn("partition {}: {}; refusing appends until space is freed", dir_, s.to_string());
      }
      return Status(Code::kStreamBackendFailed,
                    "no space left on the device: the batch was not written; the partition takes appends "
                    "again once space is freed",
                    s.fields());
    }
    spdlog::error("partition {}: cutting away a write the disk had no room for failed: {}", dir_, cut.to_string());
  }
  // Nothing in this group past the synced prefix is known to be on the device: acknowledge none of it,
  // and refuse more until a reopen lets recovery decide what survived.
  commit_.fail(failed_refusal());
  spdlog::error("partition {}: {}; failing pending appends until reopened", dir_, s.to_string());
  return s;
}

Status PartitionLog::roll_if_full(std::shared_ptr<Segment>& seg, uint64_t& pending_bytes, uint64_t bytes,
                                  bool& rolled) {
  rolled = false;
  const uint64_t seg_bytes = seg->written_size() + pending_bytes;
  const uint64_t limit = std::min(segment_bytes_.load(std::memory_order_relaxed), seg->segment_bytes());
  if (seg_bytes == 0 || seg_bytes + bytes <= limit) return Status();
  if (pending_bytes > 0) {
    Status written = seg->append(write_pieces_);
    write_pieces_.clear();
    pending_bytes = 0;
    STREAMD_RETURN_IF_ERROR(written);
  }
  STREAMD_RETURN_IF_ERROR(seg->sync());
  seg->publish();
  committed_next_.store(seg->written_end().value, std::memory_order_release);
  rolled = true;  // before the roll: what was synced is durable even if the roll fails
  STREAMD_RETURN_IF_ERROR(roll(written_next_));
  seg = active();
  return Status();
}

Status PartitionLog::write_group(std::vector<Pending>& group, std::vector<Result<AppendRange>>& ranges, size_t& durable,
                                 bool sync) {
  // Through the journal the marker's removal is made durable by the checkpoint of the record that
  // names this directory (flush_journaled), or found undone by replay, which scans.
  STREAMD_RETURN_IF_ERROR(drop_clean_marker(/*durable=*/sync));
  const Timestamp at = std::max(clock_.now(), last_appended_at_);
  last_appended_at_ = at;
  // A roll that sealed the active segment found no room for its successor: create it first.
  if (active()->sealed()) STREAMD_RETURN_IF_ERROR(roll(written_next_));
  std::shared_ptr<Segment> seg = active();
  // The group's batches go out in one gathered write per segment, without being copied together.
  write_pieces_.clear();
  uint64_t pending_bytes = 0;
  for (auto& p : group) {
    const BatchHeader header = peek_header(p.batch);
    // Its last offset and the one after it must exist (docs/FORMAT.md §Validity, rule 9): a range that
    // wrapped past 2^64 - 1 would hand out small offsets again. Only a partition whose files claim
    // offsets that high gets here; it keeps what it has and takes no more.
    if (header.last_delta >= UINT64_MAX - written_next_.value) {
      ranges.emplace_back(Status(Code::kStreamBackendFailed,
                                 "the batch's offsets would pass the last offset there is (2^64 - 1): the "
                                 "partition takes no more records",
                                 {{"path", dir_}, {"next", std::to_string(written_next_.value)}}));
      continue;
    }
    // An idempotent producer's batch is checked where its offsets would be assigned (producer_state.h):
    // a duplicate is answered with its first copy's offsets, out of order or fenced is refused.
    const ProducerStamp stamp = stamp_of(header, p.batch);
    if (stamp.idempotent()) {
      ProducerState::Check check = producers_.check(stamp, header.last_delta);
      if (check.verdict == ProducerState::Verdict::kDuplicate) {
        ranges.emplace_back(check.original);
        continue;
      }
      if (check.verdict == ProducerState::Verdict::kRefused) {
        ranges.emplace_back(std::move(check.refusal).with("path", dir_));
        continue;
      }
    }
    bool rolled = false;
    Status room = roll_if_full(seg, pending_bytes, p.batch.size(), rolled);
    // What the roll synced and published is acknowledged even when creating the next segment failed.
    if (rolled) durable = ranges.size();
    STREAMD_RETURN_IF_ERROR(room);
    const Offset base = written_next_;
    seal_batch(p.batch, base, at);
    write_pieces_.push_back(p.batch);
    pending_bytes += p.batch.size();
    const AppendRange range{base, base + header.last_delta};
    ranges.emplace_back(range);
    written_next_ = base + header.last_delta + 1;
    p.written = true;
    if (stamp.idempotent()) {
      producers_.stage(stamp, header.last_delta, range, at);
      p.staged = true;
    }
  }
  if (!write_pieces_.empty()) {
    Status written =
        seg->append(write_pieces_, sync ? Segment::Durability::kOwnSync : Segment::Durability::kJournal);
    write_pieces_.clear();
    STREAMD_RETURN_IF_ERROR(written);
  }
  if (!sync) return Status();
  STREAMD_RETURN_IF_ERROR(seg->sync());
  seg->publish();
  durable = group.size();
  return Status();
}

Status PartitionLog::replay(const std::vector<std::string>& batches) {
  std::vector<const std::string*> missing;
  for (const std::string& b : batches) {
    const BatchHeader header = peek_header(b);
    if (header.end_offset() <= written_next_) continue;  // the segments kept it
    const Offset expected = missing.empty() ? written_next_ : peek_header(*missing.back()).end_offset();
    if (header.base_offset != expected) {
      return Status(Code::kStreamBackendFailed,
                    "the journal holds records past a gap in the partition's log: records acknowledged "
                    "earlier are missing from its segments",
                    {{"op", "replay journal"}, {"path", dir_}, {"next", std::to_string(expected.value)},
                     {"journal_base", std::to_string(header.base_offset.value)}});
    }
    missing.push_back(&b);
  }
  if (missing.empty()) return Status();
  STREAMD_RETURN_IF_ERROR(drop_clean_marker());
  if (active()->sealed()) STREAMD_RETURN_IF_ERROR(roll(written_next_));
  std::shared_ptr<Segment> seg = active();
  write_pieces_.clear();
  uint64_t pending_bytes = 0;
  for (const std::string* b : missing) {
    const BatchHeader header = peek_header(*b);
    bool rolled = false;
    STREAMD_RETURN_IF_ERROR(roll_if_full(seg, pending_bytes, b->size(), rolled));
    write_pieces_.push_back(*b);
    pending_bytes += b->size();
    written_next_ = header.end_offset();
    last_appended_at_ = std::max(last_appended_at_, header.appended_at);
    producers_.replay(stamp_of(header, *b), header.last_delta, {header.base_offset, header.last_offset()},
                      header.appended_at);
  }
  Status written = seg->append(write_pieces_);
  write_pieces_.clear();
  STREAMD_RETURN_IF_ERROR(written);
  STREAMD_RETURN_IF_ERROR(seg->sync());
  seg->publish();
  committed_next_.store(written_next_.value, std::memory_order_release);
  spdlog::info("partition {}: replayed {} batches from the journal, up to offset {}", dir_, missing.size(),
               written_next_.value);
  return Status();
}

std::shared_ptr<Segment> PartitionLog::active() const {
  std::shared_lock lock(segments_mu_);
  return segments_.back();
}

Offset PartitionLog::last_stable() const {
  // The end first (answer_group settles before it publishes the end): a transaction that opens after
  // this load starts at or past it, and one that a marker ended since was durable when it settled.
  const Offset end(committed_next_.load(std::memory_order_acquire));
  const std::optional<Offset> open = producers_.first_open();
  return open ? std::min(*open, end) : end;
}

PartitionSummary PartitionLog::summary() const {
  return {bounds(), size_bytes(), segments(),
          producers_.empty() ? std::string() : producers_.snapshot(Offset(committed_next_.load()))};
}

size_t PartitionLog::staged_in(const std::vector<Pending>& group, size_t n) {
  return static_cast<size_t>(std::count_if(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(n),
                                           [](const Pending& p) { return p.staged; }));
}

Status PartitionLog::write_clean_marker(bool sync) {
  auto marker = fs_.open(dir_ + "/" + kCleanMarker, OpenMode::kCreate);
  if (!marker.ok()) return marker.status();
  const std::string bytes = encode_summary(summary());
  STREAMD_RETURN_IF_ERROR((*marker)->write_at(FilePosition(0), bytes));
  STREAMD_RETURN_IF_ERROR((*marker)->truncate(bytes.size()));
  return sync ? (*marker)->sync() : Status();
}

std::optional<PartitionSummary> PartitionLog::clean_summary(FileSystem& fs, const std::string& dir) {
  auto marker = fs.open(dir + "/" + kCleanMarker, OpenMode::kReadOnly);
  if (!marker.ok()) return std::nullopt;
  auto size = (*marker)->size();
  if (!size.ok() || *size > kMaxSummaryBytes) return std::nullopt;
  std::string bytes(static_cast<size_t>(*size), '\0');
  auto n = (*marker)->read_at(FilePosition(0), bytes.data(), bytes.size());
  if (!n.ok() || *n != bytes.size()) return std::nullopt;
  return decode_summary(bytes);
}

Status PartitionLog::drop_clean_marker(bool durable) {
  const auto done = [&] { return !marked_clean() && !(durable && marker_removal_unsynced_.load()); };
  if (done()) return Status();
  std::lock_guard lock(marker_mu_);
  if (done()) return Status();
  if (marked_clean()) {
    STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + kCleanMarker));
    marker_removal_unsynced_.store(true);
    marked_clean_.store(false, std::memory_order_release);
  }
  if (durable) {
    STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));
    marker_removal_unsynced_.store(false);
  }
  return Status();
}

void PartitionLog::close(CloseMode mode) {
  if (!commit_.close()) return;
  if (commit_.failed() || mode == CloseMode::kAsIs) return;  // the next open's recovery decides
  if (marked_clean()) return;  // the files are still as the last clean close left them
  Status s = active()->seal();
  if (s.ok()) s = write_clean_marker(/*sync=*/true);
  if (s.ok()) s = fs_.sync_dir(dir_);
  if (!s.ok()) spdlog::error("partition {}: clean close failed: {}", dir_, s.to_string());
}

Result<AppendRange> wait_for_append(const std::function<void(PartitionLog::AppendCallback)>& append) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<AppendRange>> result;
  append([&](Result<AppendRange> r) {
    std::lock_guard lock(mu);
    result.emplace(std::move(r));
    cv.notify_one();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

}  // namespace streamd
