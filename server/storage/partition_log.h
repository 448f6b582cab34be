// PartitionLog: one partition's ordered, durable log — a directory of segments (segment.h).
//
// Writes: append() queues an encoded batch; one flush at a time runs on the storage executor, taking
// every queued batch, assigning offsets in queue order, writing them with one write and one fdatasync
// (group commit), then completing each batch's callback with its range; what arrived meanwhile is the
// next group, whose flush queues behind other partitions' on the executor. A batch is never split across
// syncs. After a failed sync, or a write that failed for any reason but want of space, the partition is
// failed: every queued and later append completes with STREAM_BACKEND_FAILED until the partition is
// reopened and recovered. A write the disk had no room for (ENOSPC, EDQUOT) fails only its group: the
// unfinished write is cut away, and later groups are written once space is freed.
//
// With a journal (PartitionOptions::journal), a group of at most journal_group_bytes is written into the
// segment without a sync and made durable by the journal's shared sync instead (journal.h); the
// partition's turn lasts until the journal answers, so groups still go out one at a time, in order.
// Should the journal fail the group, the partition syncs its segment itself. After a crash, replay()
// appends what the journal holds and the segments lost.
//
// Idempotent producers (docs/SEMANTICS.md §11): a batch carrying a producer id is checked against the
// partition's ProducerState where its offsets are assigned — a duplicate of one of the producer's last
// five batches is answered with that batch's offsets and not written, an out-of-order or fenced one is
// refused — and the state follows the batches that became durable. It is rebuilt at open from the
// clean marker, or the newest producer snapshot (written at each roll) and the batches after it
// (partition_producers.cc; docs/FORMAT.md §"Producer snapshots").
//
// Reads see only synced records: bounds().next is the synced end ("committed"), separate from the
// written end the flush works with. read(), bounds(), offset_at() and peek() may run on any thread,
// concurrently with appends, trims and segment replacement.
//
// Trim and retention raise `first` and remove whole segments below it; compaction swaps a closed
// segment for a rewritten one (replace_segment). Offsets are never renumbered.
//
// Callbacks run on a storage thread; keep them short (post to your own loop).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_commit.h"
#include "server/storage/partition_summary.h"
#include "server/storage/producer_state.h"
#include "server/storage/read_result.h"
#include "server/storage/record_batch.h"
#include "server/storage/segment_info.h"
#include "server/storage/segmented_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

class DeferredDirSyncs;
class Journal;
class Segment;
struct SegmentOptions;

struct PartitionOptions {
  // A segment is rolled before a batch would grow it past this (PartitionLog::set_segment_bytes
  // changes it for an open partition).
  uint64_t segment_bytes = 64ull << 20;
  // Distance in log bytes between sparse offset-index entries.
  uint32_t index_interval_bytes = 4096;
  // How far ahead of the writer the log file is zero-filled (writes into already-written blocks sync
  // without a journal commit; see docs/FORMAT.md).
  uint64_t preallocate_bytes = 4ull << 20;
  // Shared by the partitions of a store: makes small groups durable with one sync for many
  // partitions. nullptr: every group syncs its segment.
  Journal* journal = nullptr;
  // Groups of at most this many bytes go through the journal. A larger group syncs its segment: one
  // sync either way, and its bytes are written once.
  uint64_t journal_group_bytes = 64 << 10;
  // Shared by the partitions of a store: bounds their idempotent producers' states (producer_state.h).
  // nullptr: unbounded. Shared, so that a partition kept past its store's end can still count its
  // producers out.
  std::shared_ptr<ProducerLimits> producers;
};

class PartitionLog final : public SegmentedLog {
 public:
  using AppendCallback = std::function<void(Result<AppendRange>)>;
  // Called on a storage thread after each sync that published new records, with the new synced end.
  using CommitListener = std::function<void(Offset next)>;

  // Opens (creating when missing) the partition in `dir`, recovering it if it was not closed cleanly.
  // With `deferred`, a directory sync the open needs is added there for the caller to make.
  static Result<std::unique_ptr<PartitionLog>> open(FileSystem& fs, std::string dir, PartitionOptions options,
                                                    Executor& executor, const Clock& clock,
                                                    DeferredDirSyncs* deferred = nullptr);
  // What the clean marker in `dir` says of the partition, without opening it: nullopt when there is no
  // marker (its files changed since its last clean close) or it holds no whole summary.
  static std::optional<PartitionSummary> clean_summary(FileSystem& fs, const std::string& dir);
  ~PartitionLog() override;
  PartitionLog(const PartitionLog&) = delete;
  PartitionLog& operator=(const PartitionLog&) = delete;

  // Queues an encoded batch (BatchBuilder::finish) and completes `done` after the sync covering it.
  void append(std::string batch, AppendCallback done);
  // The stream's policy changed segment_bytes: segments begun from now on are sized by `bytes`; a
  // segment begun before keeps the smaller of its own size and `bytes` (its indexes were sized for
  // its own), so a smaller size also closes the active segment at the next batch that would pass it.
  void set_segment_bytes(uint64_t bytes) { segment_bytes_.store(bytes, std::memory_order_relaxed); }
  void set_commit_listener(CommitListener listener);
  // Recovery from the journal, before the partition serves anything: appends the sealed batches
  // (read_journal's, in writing order) that the log lacks, keeping their offsets and instants, and
  // syncs them. Batches below the log's end are there already. STREAM_BACKEND_FAILED when one starts
  // past the log's end: the segments lost records the journal no longer holds.
  Status replay(const std::vector<std::string>& batches);

  // Up to max_records entries from `from` on, stopping before max_bytes of record data unless nothing
  // would be returned (one entry always comes back when any exists). OFFSET_TRIMMED below first,
  // OFFSET_AHEAD past next; `from == next` returns nothing. In ReadShape::kBatches, version 2 batches
  // taken whole are one entry each (read_result.h).
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const override {
    return read(from, max_records, max_bytes, ReadShape::kRecords);
  }
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes, ReadShape shape) const;
  Bounds bounds() const override;
  // First offset whose appended_at >= t; first when t precedes all, next when it follows all. A segment
  // that cannot be read fails the lookup: answering a later segment's offset would skip its records.
  Result<Offset> offset_at(Timestamp t) const;
  // The last retained entry, or nullopt when the partition is empty.
  Result<std::optional<ReadResult>> peek() const;
  // Whether a read from `from` stays in the active segment: the records written last, which the page
  // cache holds, so such a read does not wait for the disk.
  bool reads_tail(Offset from) const;

  // Makes `before` the first retained offset, durably, and removes the whole segments below it.
  // before <= first: nothing; before > next: OFFSET_AHEAD.
  Status trim(Offset before);
  // Removes closed segments from the front while keep(info) says no (retention). Raises first.
  Status drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) override;
  // Closes the active segment and starts the next one when it holds records and roll(info) says so.
  // Retention and compaction touch closed segments only; this lets them reach a partition whose
  // traffic never fills a segment. Waits for the flush in progress and goes before the next group;
  // appends meanwhile stay queued. It blocks its thread while it waits, so it must not run on the
  // executor the flushes need (BrokerOptions::maintenance).
  Status roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) override;
  std::vector<SegmentInfo> segments() const override;
  uint64_t size_bytes() const override;

  // Compaction's swap: replaces closed segment `base` with the log file at `rewritten_path` (a full
  // segment log whose batches keep their offsets). Indexes are rebuilt; a crash leaves old or new.
  Status replace_segment(Offset base, const std::string& rewritten_path);
  // Visits every batch of closed segment `base` in order (compaction's input); false stops early.
  Status scan_segment(Offset base, const BatchVisitor& visit) const override;
  // Compaction's output: the rewritten log is written to swap_path(base), synced, and swapped in by
  // replace_segment on commit; dropped uncommitted, the swap file is removed.
  Result<std::unique_ptr<SegmentRewrite>> rewrite_segment(Offset base) override;
  // Where compaction writes the rewritten log of segment `base` before replace_segment swaps it in;
  // a file left there by a crash is removed on open.
  std::string swap_path(Offset base) const;
  const std::string& dir() const override { return dir_; }

  enum class CloseMode {
    kClean,  // seal the active segment and leave the clean marker, so the next open scans nothing
    kAsIs,   // leave the files as a crash would (the next open recovers); tests use it
  };
  // Waits for queued appends to finish, then closes as `mode` says. Appends after close fail with
  // UNAVAILABLE. After a failed sync the files are always left as they are. A partition whose files
  // have not changed since a clean open keeps its marker and closes without touching the disk.
  void close(CloseMode mode = CloseMode::kClean);
  bool failed() const { return commit_.failed(); }
  // No append queued or being written, no roll under way: what may be closed without waiting.
  bool idle() const { return commit_.idle(); }
  // Whether the clean marker still vouches for the files: opened after a clean close and unchanged
  // since, so a crash now costs the next open no scan.
  bool marked_clean() const { return marked_clean_.load(std::memory_order_acquire); }
  // Drops the states of producers idle past limits.producer_idle_expiry, as of `now`.
  void expire_producers(Timestamp now) { producers_.expire(now); }
  // Producer states held (for tests and describe).
  size_t producer_count() const { return producers_.size(); }
  // The last stable offset: the first offset of the earliest transaction open here, or the committed
  // end when none is (docs/TRANSACTIONS.md). read_committed readers stop before it.
  Offset last_stable() const override;
  // The aborted transactions whose records reach into [from, to).
  Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const override {
    return producers_.aborted_between(from, to);
  }
  std::vector<ProducerIdentity> open_producers() const { return producers_.open_producers(); }
  size_t open_transactions() const { return producers_.open_transactions(); }

 private:
  struct Pending {
    std::string batch;
    AppendCallback done;
    bool written = false;  // written into the segment (not refused, not a duplicate answered at once)
    bool staged = false;   // its producer's state was staged (producers_)
  };
  // A group written into the segment and handed to the journal, kept whole until it answers.
  struct JournaledGroup {
    std::vector<Pending> group;
    std::vector<Result<AppendRange>> ranges;
    size_t durable = 0;
    bool names_dir = false;  // its record names the directory whose marker removal is unsynced
  };

  PartitionLog(FileSystem& fs, std::string dir, PartitionOptions options, Executor& executor, const Clock& clock);
  Status recover(bool clean, DeferredDirSyncs* deferred);
  // The producers' states at open: from the clean marker's summary (`vouched`), else the newest
  // snapshot and the batches after it, else the batches of the segments within the idle expiry.
  Status rebuild_producers(const std::optional<PartitionSummary>& vouched);
  // At a roll, after `sealed` was sealed: producers_ as of its end, written and synced beside it; the
  // roll's directory sync makes its name durable, after which older snapshots are removed.
  Status snapshot_producers(const Segment& sealed);
  void remove_snapshots_before(Offset keep);
  // How many of the first `n` batches of `group` were staged.
  static size_t staged_in(const std::vector<Pending>& group, size_t n);
  // Whether the clean marker vouches for these segments: it describes exactly them, and the active
  // one's log is no shorter than it says. Bytes past that were written after the clean close by an
  // append whose removal of the marker a crash undid: never acknowledged (every path that acknowledges
  // makes the removal durable first, or journals a record, and replay removes the marker of a
  // partition it replays into), so they are cut away and the marker's summary stays exact.
  Result<std::optional<PartitionSummary>> vouched_by_marker(const std::vector<Offset>& bases);
  SegmentOptions segment_options() const;
  // What every append gets once a write or sync has failed.
  Status failed_refusal() const;
  // Writes and syncs one group of queued batches and answers each (GroupCommit's write).
  void flush_group(std::vector<Pending>& group);
  static uint64_t group_bytes(const std::vector<Pending>& group);
  // Writes the group and syncs the segment, then answers it.
  void flush_direct(std::vector<Pending>& group);
  // Writes the group into the segment and hands it to the journal, whose answer ends the turn: true.
  // False when it answered the group itself (a failed write, nothing left to journal).
  bool flush_journaled(std::vector<Pending>& group);
  void journal_answered(const std::shared_ptr<JournaledGroup>& held, Status s);
  // Writes the group, and with `sync` syncs and publishes it; ranges[i] is batch i's answer once it is
  // durable: its offsets, or the refusal of a batch whose offsets would not exist. `durable` receives
  // how many batches, from the front, were synced and published, also on failure.
  Status write_group(std::vector<Pending>& group, std::vector<Result<AppendRange>>& ranges, size_t& durable,
                     bool sync);
  // Answers a written group: `s` ok when all of it is durable, else the first `durable` batches were.
  void answer_group(std::vector<Pending>& group, const std::vector<Result<AppendRange>>& ranges, size_t durable,
                    const Status& s);
  // Before `bytes` more go into `seg`: when they would grow it past segment_bytes, writes the pending
  // pieces, syncs and publishes the segment and rolls to the next; `rolled` tells.
  Status roll_if_full(std::shared_ptr<Segment>& seg, uint64_t& pending_bytes, uint64_t bytes, bool& rolled);
  // After a failed write: puts the writer back where the log stands when the disk had no room, else
  // fails the partition. Returns what the unwritten batches are answered.
  Status settle_failed_write(const Status& s);
  Status roll(Offset base);
  std::shared_ptr<Segment> active() const;
  Status persist_first(Offset first);
  // Before the first change to the files since a clean open: removes the marker, so a crash from here
  // on is recovered by a scan. Every writer of the files calls it first. `durable`: the removal is
  // synced before the change (and a removal left unsynced earlier is synced now). The journal's path
  // leaves it unsynced: its record names the directory, whose checkpoint syncs it, and replay removes
  // a marker a crash kept before it scans the partition.
  Status drop_clean_marker(bool durable = true);
  // Leaves the marker, holding the summary of the files as they are now; `sync`: durably.
  Status write_clean_marker(bool sync);
  PartitionSummary summary() const;
  // More than any summary a partition could need (10,000 segments): a larger marker is not one.
  static constexpr uint64_t kMaxSummaryBytes = 1 << 20;
  Status drop_front_locked(const std::function<bool(const SegmentInfo&)>& drop);

  FileSystem& fs_;
  const std::string dir_;
  const PartitionOptions options_;  // but segment_bytes, which segment_bytes_ holds
  std::atomic<uint64_t> segment_bytes_;
  const Clock& clock_;
  Executor& executor_;
  const std::string journal_key_;  // this partition's records in the journal

  // Segments ordered by base offset; the last is active. Readers copy shared_ptrs under a shared lock.
  mutable std::shared_mutex segments_mu_;
  std::vector<std::shared_ptr<Segment>> segments_;

  // Writer state, touched only by the flush in progress (one at a time).
  Offset written_next_;
  Timestamp last_appended_at_;
  std::atomic<bool> out_of_space_{false};  // the last group failed for want of space (logged once)
  std::vector<std::string_view> write_pieces_;  // the sealed batches of the group being written

  std::atomic<uint64_t> first_{0};
  std::atomic<uint64_t> committed_next_{0};

  // Checked and staged by write_group, settled by answer_group (its own mutex: expiry may run anywhere).
  ProducerState producers_;

  std::mutex listener_mu_;
  CommitListener listener_;
  GroupCommit<Pending> commit_;

  // Serialises trim, retention and compaction swaps with each other and with rolls.
  std::mutex maintenance_mu_;

  // The marker's removal, shared by the flush and maintenance.
  std::mutex marker_mu_;
  std::atomic<bool> marked_clean_{false};
  std::atomic<bool> marker_removal_unsynced_{false};
  // Writer state: a journal record naming the directory is durable, so the checkpoint that removes it
  // syncs the directory first.
  bool marker_removal_journaled_ = false;
};

// Starts an append through `append` and waits for its answer: for tests, tools and the benchmark's
// single-appender case.
Result<AppendRange> wait_for_append(const std::function<void(PartitionLog::AppendCallback)>& append);
inline Result<AppendRange> append_and_wait(PartitionLog& log, std::string batch) {
  return wait_for_append([&](PartitionLog::AppendCallback done) { log.append(std::move(batch), std::move(done)); });
}

}  // namespace streamd
