// PartitionSlot: one partition of a stream, its files open or closed. Open, it is a PartitionLog;
// closed by a sweep of OpenPartitions (open_partitions.h), it holds no file and no mapping, only what
// it answers without opening: its bounds, size and segments as they stood when it closed, which nothing
// can change while it is closed. Any operation that needs the files opens it again (a clean open: the
// files are trusted as the clean close left them).
//
// An append to a closed partition does not open it on the caller's thread, which may be the network
// loop: the open runs on the storage executor and appends that arrive meanwhile wait in sending order
// behind it. Reads and maintenance open it where they run (reads_tail() is false for a closed slot, so
// the broker sends such reads to its readers). Retention decides on the segments it remembers, and
// opens the partition only when a segment must go.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/partition_log.h"
#include "server/storage/segmented_log.h"

namespace streamd {

class OpenPartitions;

class PartitionSlot final : public SegmentedLog, public std::enable_shared_from_this<PartitionSlot> {
 public:
  // Opens (creating when missing) the partition in `dir`, recovering it when it was not closed
  // cleanly; `cache` may close it again whenever it is idle. With `deferred`, the directory sync this
  // first open needs is left there for the caller (deferred_dir_syncs.h).
  static Result<std::shared_ptr<PartitionSlot>> open(FileSystem& fs, std::string dir, PartitionOptions options,
                                                     Executor& executor, const Clock& clock,
                                                     std::shared_ptr<OpenPartitions> cache,
                                                     DeferredDirSyncs* deferred = nullptr);
  // A slot for the partition in `dir` left closed, answering `summary` (its clean marker's) until it
  // is used: how a restart takes a partition unchanged since its last clean close without opening it.
  static std::shared_ptr<PartitionSlot> closed(FileSystem& fs, std::string dir, PartitionOptions options,
                                               Executor& executor, const Clock& clock,
                                               std::shared_ptr<OpenPartitions> cache, PartitionSummary summary);
  ~PartitionSlot() override;
  PartitionSlot(const PartitionSlot&) = delete;
  PartitionSlot& operator=(const PartitionSlot&) = delete;

  // PartitionLog's operations (partition_log.h), on a slot open or closed.
  void append(std::string batch, PartitionLog::AppendCallback done);
  // PartitionLog::set_segment_bytes, kept for the log's next open too.
  void set_segment_bytes(uint64_t bytes);
  void set_commit_listener(PartitionLog::CommitListener listener);
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const override {
    return read(from, max_records, max_bytes, ReadShape::kRecords);
  }
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes, ReadShape shape) const;
  Bounds bounds() const override;
  Result<Offset> offset_at(Timestamp t) const;
  Result<std::optional<ReadResult>> peek() const;
  // PartitionLog::last_stable; a closed slot answers what it was when it closed.
  Offset last_stable() const override;
  // PartitionLog::aborted_between, opening the files when closed.
  Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const override;
  // PartitionLog::open_producers; a closed slot whose last stable offset is its end has none, and
  // opens its files only otherwise.
  Result<std::vector<ProducerIdentity>> open_producers() const;
  // False while closed: reading it opens the files, which the network loop must not wait for.
  bool reads_tail(Offset from) const;
  Status trim(Offset before);
  std::vector<SegmentInfo> segments() const override;
  uint64_t size_bytes() const override;
  Status drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) override;
  Status roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) override;
  // Drops idle producers' states of an open log; a closed one's go when it opens again.
  void expire_producers(Timestamp now) const;
  Status scan_segment(Offset base, const BatchVisitor& visit) const override;
  Result<std::unique_ptr<SegmentRewrite>> rewrite_segment(Offset base) override;
  const std::string& dir() const override { return dir_; }
  bool failed() const;

  // For the sweep: closes the files when nothing uses them (no append queued or being written, no
  // caller inside an operation, not failed, not closed for good). Returns the files it held, or 0
  // when it kept them.
  uint64_t close_if_idle();
  // Whether an operation used it since the last call (the sweep's CLOCK bit); clears the bit. Appends,
  // reads, lookups, trims and maintenance that acts are uses.
  bool take_used() { return used_.exchange(false, std::memory_order_relaxed); }
  // Files held now: three per segment when open (a log and two indexes), none when closed.
  uint64_t files() const;
  bool is_open() const;

  // Closes for good (the stream closes or is deleted): queued appends finish first, later ones are
  // refused UNAVAILABLE; an open partition stays readable through its files.
  void close(PartitionLog::CloseMode mode = PartitionLog::CloseMode::kClean);

 private:
  struct Waiting {
    std::string batch;
    PartitionLog::AppendCallback done;
  };
  enum class State {
    kClosed,      // no files open
    kOpenPosted,  // appends wait for an open posted to the executor (anyone may open it first)
    kOpening,     // an open runs, mu_ released meanwhile
    kOpen,
    kClosing,     // a sweep closes it, mu_ released meanwhile
    kGone,        // closed for good; log_ stays readable when it was open
  };

  PartitionSlot(FileSystem& fs, std::string dir, PartitionOptions options, Executor& executor, const Clock& clock,
                std::shared_ptr<OpenPartitions> cache);
  // The open log, opened first when closed (waits for an open or close under way). Marks it used.
  Result<std::shared_ptr<PartitionLog>> log() const;
  // Opens the files; mu_ held by `lock` and released while the disk is read. On failure the appends
  // that waited are moved to `refused`, to be answered once the lock is released.
  Status open_locked(std::unique_lock<std::mutex>& lock, std::vector<Waiting>& refused,
                     DeferredDirSyncs* deferred = nullptr) const;
  // Posts the open that appends waiting on a closed slot need; mu_ held.
  void post_open() const;
  // The posted open, on the executor: opens, and the log takes the appends that waited.
  void open_for_appends() const;
  // The log when open (or closed for good while open), else nullptr. Not a use: what only looks
  // (bounds for /metrics, retention's decisions) must not keep a partition open.
  std::shared_ptr<PartitionLog> open_log() const;
  Status closed_refusal() const;

  FileSystem& fs_;
  const std::string dir_;
  PartitionOptions options_;  // guarded by mu_: set_segment_bytes changes it
  Executor& executor_;
  const Clock& clock_;
  const std::shared_ptr<OpenPartitions> cache_;

  // Opening is an act of readers too (read() is const), so the state it changes is mutable.
  mutable std::mutex mu_;
  mutable std::condition_variable settled_cv_;  // an open or close under way ended
  mutable State state_ = State::kClosed;
  mutable std::shared_ptr<PartitionLog> log_;  // set while open, and after a close for good from open
  mutable uint64_t files_counted_ = 0;         // what the cache was told this open holds
  mutable std::vector<Waiting> waiting_;       // appends that came while it was not open, in order
  PartitionLog::CommitListener listener_;
  // What a closed slot answers: the log as it stood when it closed.
  Bounds bounds_;
  Offset last_stable_;
  uint64_t size_bytes_ = 0;
  std::vector<SegmentInfo> segments_;

  mutable std::atomic<bool> used_{true};
};

inline Result<AppendRange> append_and_wait(PartitionSlot& slot, std::string batch) {
  return wait_for_append([&](PartitionLog::AppendCallback done) { slot.append(std::move(batch), std::move(done)); });
}

}  // namespace streamd
