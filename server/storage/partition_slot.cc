#include "server/storage/partition_slot.h"

#include <algorithm>

#include "server/storage/open_partitions.h"

namespace streamd {
namespace {

// A closed partition's compaction output keeps the log it swaps into open until it is dropped.
class HeldRewrite final : public SegmentRewrite {
 public:
  HeldRewrite(std::shared_ptr<PartitionLog> log, std::unique_ptr<SegmentRewrite> rewrite)
      : log_(std::move(log)), rewrite_(std::move(rewrite)) {}
  Status add(std::string_view batch) override { return rewrite_->add(batch); }
  Status commit() override { return rewrite_->commit(); }

 private:
  std::shared_ptr<PartitionLog> log_;  // declared first: outlives the rewrite that refers to it
  std::unique_ptr<SegmentRewrite> rewrite_;
};

uint64_t files_of(const PartitionLog& log) { return 3 * static_cast<uint64_t>(log.segments().size()); }

}  // namespace

PartitionSlot::PartitionSlot(FileSystem& fs, std::string dir, PartitionOptions options, Executor& executor,
                             const Clock& clock, std::shared_ptr<OpenPartitions> cache)
    : fs_(fs), dir_(std::move(dir)), options_(options), executor_(executor), clock_(clock), cache_(std::move(cache)) {}

Result<std::shared_ptr<PartitionSlot>> PartitionSlot::open(FileSystem& fs, std::string dir, PartitionOptions options,
                                                           Executor& executor, const Clock& clock,
                                                           std::shared_ptr<OpenPartitions> cache,
                                                           DeferredDirSyncs* deferred) {
  std::shared_ptr<PartitionSlot> slot(new PartitionSlot(fs, std::move(dir), options, executor, clock, std::move(cache)));
  std::unique_lock lock(slot->mu_);
  std::vector<Waiting> refused;
  STREAMD_RETURN_IF_ERROR(slot->open_locked(lock, refused, deferred));
  return slot;
}

std::shared_ptr<PartitionSlot> PartitionSlot::closed(FileSystem& fs, std::string dir, PartitionOptions options,
                                                     Executor& executor, const Clock& clock,
                                                     std::shared_ptr<OpenPartitions> cache, PartitionSummary summary) {
  std::shared_ptr<PartitionSlot> slot(new PartitionSlot(fs, std::move(dir), options, executor, clock, std::move(cache)));
  slot->bounds_ = summary.bounds;
  const std::optional<Offset> open = ProducerState::first_open_of(summary.producers);
  slot->last_stable_ = open ? std::min(*open, summary.bounds.next) : summary.bounds.next;
  slot->size_bytes_ = summary.size_bytes;
  slot->segments_ = std::move(summary.segments);
  slot->used_.store(false, std::memory_order_relaxed);
  return slot;
}

PartitionSlot::~PartitionSlot() { close(); }

Status PartitionSlot::closed_refusal() const {
  return Status(Code::kUnavailable, "the partition is closed", {{"path", dir_}});
}

Status PartitionSlot::open_locked(std::unique_lock<std::mutex>& lock, std::vector<Waiting>& refused,
                                  DeferredDirSyncs* deferred) const {
  state_ = State::kOpening;
  const PartitionOptions options = options_;
  lock.unlock();
  auto opened = PartitionLog::open(fs_, dir_, options, executor_, clock_, deferred);
  const uint64_t files = opened.ok() ? files_of(**opened) : 0;
  lock.lock();
  settled_cv_.notify_all();  // the waiters see the state set below once the lock is released
  if (!opened.ok()) {
    state_ = State::kClosed;
    refused.swap(waiting_);
    return opened.status();
  }
  log_ = std::move(opened).value();
  state_ = State::kOpen;
  files_counted_ = files;
  log_->set_segment_bytes(options_.segment_bytes);  // a change made while it opened
  if (listener_) log_->set_commit_listener(listener_);
  // The appends that waited go first, in the order they came; later ones find the log open. The new
  // log is neither closed nor failed, so none is answered here, under the lock.
  for (Waiting& w : waiting_) log_->append(std::move(w.batch), std::move(w.done));
  waiting_.clear();
  cache_->opened(files);
  return Status();
}

void PartitionSlot::post_open() const {
  state_ = State::kOpenPosted;
  // A weak reference: a slot destroyed first is not touched (its close answered the appends).
  std::weak_ptr<const PartitionSlot> weak = weak_from_this();
  executor_.post([weak] {
    if (auto slot = weak.lock()) slot->open_for_appends();
  });
}

void PartitionSlot::open_for_appends() const {
  std::unique_lock lock(mu_);
  if (state_ != State::kOpenPosted) return;  // opened by a reader first, or closed for good
  std::vector<Waiting> refused;
  const Status s = open_locked(lock, refused);
  lock.unlock();
  for (Waiting& w : refused) w.done(s);
}

Result<std::shared_ptr<PartitionLog>> PartitionSlot::log() const {
  used_.store(true, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  for (;;) {
    switch (state_) {
      case State::kOpen:
        return log_;
      case State::kGone:
        if (log_) return log_;  // closed for good while open: still readable through its files
        return closed_refusal();
      case State::kOpening:
      case State::kClosing:
        settled_cv_.wait(lock);
        break;
      case State::kClosed:
      case State::kOpenPosted: {
        std::vector<Waiting> refused;
        const Status s = open_locked(lock, refused);
        if (!s.ok()) {
          lock.unlock();
          for (Waiting& w : refused) w.done(s);
          return s;
        }
        break;
      }
    }
  }
}

void PartitionSlot::append(std::string batch, PartitionLog::AppendCallback done) {
  used_.store(true, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  if (log_ && (state_ == State::kOpen || state_ == State::kGone)) {
    // Submitted outside the lock: a refusal is answered at once, and its callback may use the slot.
    // The copy keeps a sweep from closing the log before the append is queued in it.
    std::shared_ptr<PartitionLog> log = log_;
    lock.unlock();
    log->append(std::move(batch), std::move(done));
    return;
  }
  if (state_ == State::kGone) {
    lock.unlock();
    done(closed_refusal());
    return;
  }
  waiting_.push_back({std::move(batch), std::move(done)});
  // An open or close under way hands them on; a closed slot opens off this thread.
  if (state_ == State::kClosed) post_open();
}

void PartitionSlot::set_segment_bytes(uint64_t bytes) {
  std::lock_guard lock(mu_);
  options_.segment_bytes = bytes;
  if (log_) log_->set_segment_bytes(bytes);
}

void PartitionSlot::set_commit_listener(PartitionLog::CommitListener listener) {
  std::lock_guard lock(mu_);
  listener_ = std::move(listener);
  if (log_) log_->set_commit_listener(listener_);
}

std::shared_ptr<PartitionLog> PartitionSlot::open_log() const {
  std::lock_guard lock(mu_);
  return state_ == State::kOpen || state_ == State::kGone ? log_ : nullptr;
}

Result<ReadResult> PartitionSlot::read(Offset from, uint32_t max_records, uint64_t max_bytes,
                                       ReadShape shape) const {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->read(from, max_records, max_bytes, shape);
}

Result<Offset> PartitionSlot::offset_at(Timestamp t) const {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->offset_at(t);
}

Result<std::optional<ReadResult>> PartitionSlot::peek() const {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->peek();
}

bool PartitionSlot::reads_tail(Offset from) const {
  auto log = open_log();
  return log && log->reads_tail(from);
}

Status PartitionSlot::trim(Offset before) {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->trim(before);
}

Bounds PartitionSlot::bounds() const {
  if (auto log = open_log()) return log->bounds();
  std::lock_guard lock(mu_);
  return bounds_;
}

Offset PartitionSlot::last_stable() const {
  if (auto log = open_log()) return log->last_stable();
  std::lock_guard lock(mu_);
  return last_stable_;
}

Result<std::vector<AbortedTxn>> PartitionSlot::aborted_between(Offset from, Offset to) const {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->aborted_between(from, to);
}

Result<std::vector<ProducerIdentity>> PartitionSlot::open_producers() const {
  if (open_log() == nullptr) {
    std::lock_guard lock(mu_);
    if (last_stable_ >= bounds_.next) return std::vector<ProducerIdentity>{};
  }
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->open_producers();
}

uint64_t PartitionSlot::size_bytes() const {
  if (auto log = open_log()) return log->size_bytes();
  std::lock_guard lock(mu_);
  return size_bytes_;
}

std::vector<SegmentInfo> PartitionSlot::segments() const {
  if (auto log = open_log()) return log->segments();
  std::lock_guard lock(mu_);
  return segments_;
}

bool PartitionSlot::failed() const {
  auto log = open_log();
  return log && log->failed();
}

Status PartitionSlot::roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) {
  if (auto log = open_log()) return log->roll_active_if(roll);
  // Closed: decided on the active segment as it closed, which nothing has changed since.
  std::vector<SegmentInfo> segments = this->segments();
  if (segments.empty() || segments.back().bytes == 0 || !roll(segments.back())) return Status();
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->roll_active_if([](const SegmentInfo&) { return true; });
}

void PartitionSlot::expire_producers(Timestamp now) const {
  if (auto log = open_log()) log->expire_producers(now);
}

Status PartitionSlot::drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) {
  if (auto log = open_log()) return log->drop_front_segments(drop);
  // Closed: decided on the segments as they closed; the open log then drops exactly those (a trim
  // meanwhile may have dropped some already).
  std::vector<SegmentInfo> segments = this->segments();
  std::vector<Offset> decided;
  for (size_t i = 0; i + 1 < segments.size() && drop(segments[i]); ++i) decided.push_back(segments[i].base);
  if (decided.empty()) return Status();
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->drop_front_segments([&decided](const SegmentInfo& info) {
    return std::find(decided.begin(), decided.end(), info.base) != decided.end();
  });
}

Status PartitionSlot::scan_segment(Offset base, const BatchVisitor& visit) const {
  auto log = this->log();
  if (!log.ok()) return log.status();
  return (*log)->scan_segment(base, visit);
}

Result<std::unique_ptr<SegmentRewrite>> PartitionSlot::rewrite_segment(Offset base) {
  auto log = this->log();
  if (!log.ok()) return log.status();
  auto rewrite = (*log)->rewrite_segment(base);
  if (!rewrite.ok()) return rewrite.status();
  return std::unique_ptr<SegmentRewrite>(new HeldRewrite(std::move(log).value(), std::move(rewrite).value()));
}

uint64_t PartitionSlot::files() const {
  auto log = open_log();
  return log ? files_of(*log) : 0;
}

bool PartitionSlot::is_open() const {
  std::lock_guard lock(mu_);
  return state_ == State::kOpen;
}

uint64_t PartitionSlot::close_if_idle() {
  std::unique_lock lock(mu_);
  // Only the slot holds the log, and nothing is queued in it: no one is inside an operation, and an
  // append can reach the log only through this lock. A failed log keeps refusing until a restart.
  if (state_ != State::kOpen || log_.use_count() != 1 || !log_->idle() || log_->failed()) return 0;
  const uint64_t files = files_of(*log_);
  bounds_ = log_->bounds();
  last_stable_ = log_->last_stable();
  size_bytes_ = log_->size_bytes();
  segments_ = log_->segments();
  state_ = State::kClosing;
  std::shared_ptr<PartitionLog> log = std::move(log_);
  lock.unlock();
  // Outside the lock: a partition written since its open seals and syncs here, and bounds() (asked
  // on the network loop) answers from what was just kept meanwhile.
  log->close(PartitionLog::CloseMode::kClean);
  log.reset();
  lock.lock();
  const uint64_t counted = files_counted_;
  files_counted_ = 0;
  settled_cv_.notify_all();
  state_ = State::kClosed;
  if (!waiting_.empty()) post_open();  // appends came while it closed: open it again for them
  lock.unlock();
  cache_->closed(counted);
  return files;
}

void PartitionSlot::close(PartitionLog::CloseMode mode) {
  std::unique_lock lock(mu_);
  settled_cv_.wait(lock, [this] { return state_ != State::kOpening && state_ != State::kClosing; });
  if (state_ == State::kGone) return;
  const State was = state_;
  state_ = State::kGone;
  std::vector<Waiting> refused;
  refused.swap(waiting_);
  const uint64_t counted = files_counted_;
  files_counted_ = 0;
  std::shared_ptr<PartitionLog> log = log_;
  lock.unlock();
  for (Waiting& w : refused) w.done(closed_refusal());
  if (was == State::kOpen) {
    log->close(mode);
    cache_->closed(counted);
  }
}

}  // namespace streamd
