// PgPartition: one partition of the PostgreSQL engine (docs/ENGINES.md §"The PostgreSQL engine"). Its
// head row (streamd_heads) holds first/next offsets, retained bytes, the active segment and the last
// instant; each appended batch is one row of streamd_batches, sealed exactly as the file engine writes
// it (docs/FORMAT.md §"Record batch": offsets, instant, CRC32C) in a bytea; closed segments are rows of
// streamd_segments, so retention and compaction apply the rules every engine shares
// (server/storage/segmented_log.h) to the database's rows.
//
// Appends queue in a GroupCommit on the engine's threads: one statement in flight per partition, with
// every batch that arrived meanwhile in it, one row each (pg_partition_append.cc). The statement
// advances the head row only if it still says what this broker last saw (next offset and active
// segment), and inserts the rows in the same statement (WITH h AS (UPDATE … RETURNING …) INSERT …
// SELECT … FROM h): the row lock serialises appends to the partition, a rollback leaves no gap, and a
// reader's snapshot holds a prefix. When another broker moved the head first nothing is inserted, and
// the group is written again with the head row locked first; so are the partition's next groups while
// other brokers keep appending to it. An append is answered once its COMMIT returned.
//
// bounds(), size_bytes() and segment_count() answer from the head this broker holds in memory (kept by
// its own statements and refreshed by refresh()); reads, peek and offset_at query the database. That
// head may lag other brokers' appends by a NOTIFY's latency (a poll interval when one is lost), so reads
// are not bounded by it (a snapshot holds whole batches of a prefix), a read at or past its end and a
// commit past it ask the head row first (fresh_bounds), and a read that went past it takes the head
// row's: a record acknowledged through one broker is readable through every other at once.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/broker/pg/pg_notifier.h"
#include "server/broker/pg/pg_pool.h"
#include "server/broker/stream_engine.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/group_commit.h"
#include "server/storage/segmented_log.h"

namespace streamd {

// A partition's head row.
struct PgHead {
  Offset first;
  Offset next;
  uint64_t bytes = 0;
  Timestamp last_at;         // the newest batch's instant (instants never decrease along a partition)
  Offset active_base;        // the active segment: [active_base, next)
  uint64_t active_bytes = 0;
  Timestamp active_min_at;   // its first batch's instant (meaningless while active_bytes == 0)
  uint32_t segments = 1;     // closed segments and the active one
  // The first offset of the earliest transaction open on the partition (nullopt: none). It changes only
  // with next, so that a head names a last stable offset consistent with its end.
  std::optional<Offset> first_open;
  // The last stable offset this head names.
  Offset last_stable() const { return first_open ? std::min(*first_open, next) : next; }
};

// The head row's columns, in the order read_head() and refresh() expect them.
inline constexpr const char* kPgHeadColumns =
    "first_offset, next_offset, bytes, last_at, active_base, active_bytes, active_min_at, segments, first_open";
PgHead pg_head_from(const PgResult& r, int row, int first_col);

// What a partition's appends are bounded by, from the engine's options.
struct PgAppendSettings {
  // How long a producer's row outlives its last batch (docs/SEMANTICS.md §11).
  std::chrono::microseconds producer_idle_expiry{0};
  // How long an idempotent batch whose commit went unanswered is sent again by the broker itself
  // (storage.postgres.resend_unknown_for; zero: answered unknown at once).
  std::chrono::milliseconds resend_unknown_for{0};
};

class PgPartition final : public EnginePartition, public SegmentedLog {
 public:
  // Appends run on `executor`, whose threads block on the database; `notifier` hears of each one.
  PgPartition(PgPool& pool, PgNotifier& notifier, int64_t stream_id, int32_t part, std::string name,
              uint64_t segment_bytes, Executor& executor, const Clock& clock, const PgHead& head,
              const PgAppendSettings& settings);
  ~PgPartition() override;
  PgPartition(const PgPartition&) = delete;
  PgPartition& operator=(const PgPartition&) = delete;

  void append(std::string batch, AppendDone done) override;
  void set_commit_listener(CommitListener listener) override;
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const override;
  Result<ReadResult> read_batches(Offset from, uint32_t max_records, uint64_t max_bytes) const override;
  bool reads_tail(Offset /*from*/) const override { return false; }  // every read is a query
  Bounds bounds() const override;
  Result<Bounds> fresh_bounds() const override;
  bool bounds_may_lag() const override { return true; }
  Result<Offset> offset_at(Timestamp t) const override;
  Result<std::optional<TimedOffset>> offset_for_create_time(CreateTime t) const override;
  Result<std::optional<ReadResult>> peek() const override;
  // From the head held here (docs/ENGINES.md §Transactions): it may lag the head row, never pass it.
  Offset last_stable() const override;
  // Queries streamd_aborted_txns and streamd_open_txns.
  Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const override;
  Result<std::vector<ProducerIdentity>> open_producers() const override;
  Status trim(Offset before) override;
  Result<uint64_t> apply_retention(const Policy& policy, Timestamp now) override;
  Result<CompactionStats> compact(std::chrono::milliseconds compact_after, Timestamp now) override;
  uint64_t size_bytes() const override;
  uint32_t segment_count() const override;
  // Never: a failed statement leaves the database consistent, and the next append reads the head again.
  bool failed() const override { return false; }

  std::vector<SegmentInfo> segments() const override;
  Status drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) override;
  Status roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) override;
  Status scan_segment(Offset base, const BatchVisitor& visit) const override;
  Result<std::unique_ptr<SegmentRewrite>> rewrite_segment(Offset base) override;
  const std::string& dir() const override { return name_; }

  // Counts the trims, retention and compaction passes this broker committed here: a head row read
  // before the latest one is older than the head kept, though its next offset may be the same.
  uint64_t maintenance_generation() const;
  // Takes the head another broker may have moved (the engine's poll and NOTIFY), read when
  // maintenance_generation() was `generation`; wakes long polls when records appeared.
  void refresh(const PgHead& head, uint64_t generation) const;
  // Answers queued appends; later ones are refused UNAVAILABLE.
  void close();
  // Writes each producer's commit or abort marker, one statement per partition, in the database
  // transaction open on this thread's pinned connection (PgPool::Pin): transactions' ends, written with
  // their end records and offsets (PgEngine::write_ends). Every partition's head row is locked, in the
  // order given, and its producers' rows read in one round trip; every partition's writes go in one
  // more. Returns what to run once that transaction committed (each broker's head moves, long polls
  // wake). A producer that holds no open transaction on a partition gets no marker there. An error
  // names the stream of the partition that failed.
  struct Marker {
    ProducerIdentity producer;
    bool commit = false;
  };
  struct MarkersOf {
    PgPartition* partition;
    std::string stream;
    std::vector<Marker> markers;
  };
  static Result<std::vector<std::function<void()>>> write_markers_in(const std::vector<MarkersOf>& partitions);
  // The stream's policy changed segment_bytes: from the next append on, no segment grows past it.
  void set_segment_bytes(uint64_t bytes) { segment_bytes_.store(bytes, std::memory_order_relaxed); }

 private:
  // read() and read_batches(), in `shape`.
  Result<ReadResult> read_shaped(Offset from, uint32_t max_records, uint64_t max_bytes,
                                 ReadShape shape) const;
  struct Pending {
    std::string batch;
    AppendDone done;
    // Set by an idempotent span's check: a duplicate's first offsets or a refusal, answered as it is
    // and never written.
    std::optional<Result<AppendRange>> answer;
  };
  struct ClosedSegment;
  // What one of this broker's statements wrote: the head it left, the bytes and segments it added.
  struct OwnAppend {
    PgHead head;
    uint64_t added = 0;
    uint32_t closed = 0;
  };
  class Rewrite;
  // The statement appending a span's rows (rows_sql()), and the head it leaves when it writes.
  struct RowsStatement {
    PgParams params;
    OwnAppend after;
  };
  static constexpr const char* kRowsStatementName = "streamd_append";
  static constexpr const char* kLockedHeadName = "streamd_head_locked";

  void append_group(std::vector<Pending>& group);
  // group[begin, end) through append_idempotent() or append_span() on a connection of its own. An
  // idempotent span whose outcome is unknown is sent again until the database answers, for up to
  // resend_unknown_for: the producers' rows answer a batch that was kept with its original offsets, so
  // its producer learns what happened instead of "possibly written" — which a Kafka client resolves
  // only by resending under a new epoch, where the copy is no longer recognised (docs/ENGINES.md
  // §"Idempotent producers").
  Status write_span(std::vector<Pending>& group, size_t begin, size_t end, bool idempotent,
                    std::vector<AppendRange>& ranges);
  Status write_span_once(std::vector<Pending>& group, size_t begin, size_t end, bool idempotent,
                         std::vector<AppendRange>& ranges);
  // group[begin, end) in one statement, its ranges added to `ranges` once written: without the row lock
  // unless other brokers are known to append here, and again with it when that statement lost the race.
  Status append_span(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                     std::vector<AppendRange>& ranges);
  // group[begin, end) sealed at the head held here (read first when stale), in one statement, its ranges
  // added to `ranges` as append_rows() does. False when another broker moved the head (nothing written).
  Result<bool> append_unlocked(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                               std::vector<AppendRange>& ranges);
  // group[begin, end) in a transaction that locks the head row first and reads it: cannot lose a race.
  // Its ranges are added to `ranges` as append_rows() does.
  Status append_locked(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                       std::vector<AppendRange>& ranges);
  // The statement writing group[begin, end) sealed after `before`, its ranges added to `ranges` whether
  // or not it wrote (append_span() drops them when it did not); nothing when the head row no longer says
  // `before`. Does not change the head held here: took_own_append() does, once committed.
  Result<std::optional<OwnAppend>> append_rows(PgConnection& conn, std::vector<Pending>& group, size_t begin,
                                               size_t end, const PgHead& before, std::vector<AppendRange>& ranges);
  // append_rows()' statement, not yet run: it writes only where the head row still says `before`.
  RowsStatement rows_statement(std::vector<Pending>& group, size_t begin, size_t end, const PgHead& before,
                               std::vector<AppendRange>& ranges);
  static const std::string& rows_sql();
  void took_own_append(const OwnAppend& a);
  // What follows an append this broker wrote: the other brokers hear of `head`, long polls wake.
  void announce(const PgHead& head);
  // took_own_append() and announce() of a write outside the partition's queue.
  void took_appended(const OwnAppend& a);
  // group[begin, end) when some batch of it has an idempotent producer (docs/ENGINES.md §"Idempotent
  // producers"): in one transaction holding the head row, the producers' rows are read, each batch
  // checked against them (a duplicate or a refusal answered, not written), the rest written and the
  // rows written back, so that every broker of the database checks against the same state.
  Status append_idempotent(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                           std::vector<AppendRange>& ranges);
  // An idempotent span's transaction, in the parts around its two round trips, so that several
  // partitions' spans can share them (write_markers_in). The statements point into the span, which must
  // stay where it is until their round trip is answered.
  struct IdempotentSpan {
    IdempotentSpan(std::vector<Pending>& of, size_t from, size_t to, std::vector<AppendRange>& written);
    std::vector<Pending>& group;
    size_t begin, end;
    std::vector<AppendRange>& ranges;
    PgParams key, read;                    // the first round trip's
    std::optional<RowsStatement> append;   // the second's, when something is written
    std::optional<PgParams> txn_changes;
    PgParams write;
    std::vector<std::string> states;
    std::optional<OwnAppend> done;  // what was written (the head as locked, when nothing)
  };
  // The head row locked, then the producers' rows read.
  std::vector<PgStatement> lock_statements(IdempotentSpan& span) const;
  // Checks the span's batches against what the first round trip read (answering duplicates and
  // refusals) and forms the second round trip's statements.
  Status took_lock(IdempotentSpan& span, const PgResult& head_row, const PgResult& rows);
  // The rows, the transactions they open or end, the producers' rows; none when nothing is written.
  static std::vector<PgStatement> write_statements(const IdempotentSpan& span);
  // Their answers, from answers[first] on.
  Status took_writes(IdempotentSpan& span, const std::vector<PgResult>& answers, size_t first) const;
  // Remembers the first batch of each idempotent producer in `group` that the database did not write
  // (answered with a failure: its outcome unknown, or not written), and forgets a producer whose batch
  // was written or recognised.
  void note_failed_batches(const std::vector<Pending>& group);
  // The answer to a batch the producers' rows refused with `refusal`. A gap that starts exactly at a
  // batch this broker failed to write is not the producer's error: it still holds that batch and sends
  // it again, so this one is answered "not written" (retriable, outcome known) rather than
  // OUT_OF_ORDER_SEQUENCE, which a Kafka producer that was told "possibly written" for the first
  // batch takes as fatal (docs/ENGINES.md §"Idempotent producers").
  Status refusal_after_failures(const ProducerStamp& stamp, Status refusal) const;
  // The statement (txn_changes_sql()) writing what the transactions that `before` (the producers' state
  // as read) and `after` (as the span left it) open or end to streamd_open_txns and streamd_aborted_txns,
  // and the head's first_open, which it returns; nothing when no transaction opens or ends. It writes
  // only where the head row's next offset is `next`: the span's rows were written.
  std::optional<PgParams> txn_changes_params(const std::vector<OpenTxn>& before, const ProducerState& after,
                                             int64_t next) const;
  static const std::string& txn_changes_sql();
  static constexpr const char* kTxnChangesName = "streamd_txn_changes";
  // Deletes the rows of producers idle past the expiry, as of `now`.
  Status expire_producers(PgConnection& conn, Timestamp now);
  // Reads the head row, locking it FOR UPDATE inside a transaction when `lock`.
  Result<PgHead> read_head(PgConnection& conn, bool lock) const;
  // The head row locked FOR UPDATE as the first round trip of an implicit transaction (or of the
  // caller's explicit one), which the caller's next kSync pipeline ends. On an error nothing is left
  // open.
  Result<PgHead> lock_head(PgConnection& conn) const;
  static const std::string& head_sql(bool lock);
  Result<PgHead> head_in(const PgResult& r) const;
  // The head as a lock read it, held here; and whether another broker appended since this one's last
  // append.
  void hold_locked_head(const PgHead& head);
  void set_head(const PgHead& head);
  // Takes the head a trim, retention or compaction committed. Appends that landed after it are in the
  // head this broker holds but not in `after`: then only the first offset is taken, and the head is
  // read again before the next append.
  void apply_maintenance(const PgHead& after);
  void notify_listener(Offset next) const;
  // Locks the rows of the closed segments (those ending at or before `upto`, or all): before the head
  // row, in every transaction that takes both.
  Status lock_segments(PgConnection& conn, std::optional<Offset> upto) const;
  // Closed segments in order, then the active one, from `head`.
  Result<std::vector<SegmentInfo>> segments_of(PgConnection& conn, const PgHead& head) const;
  // Inside a transaction holding the head row: drops the closed segments [front, cut) and moves first.
  Status drop_front_locked(PgConnection& conn, PgHead& head, const std::vector<SegmentInfo>& dropped,
                           Offset first);
  Status replace_segment(Offset base, const std::vector<std::string>& batches);
  // Runs `pass` holding this partition's advisory lock; false when another broker holds it.
  template <typename Pass>
  Result<bool> with_maintenance_lock(Pass&& pass);
  Status no_closed_segment(Offset base) const;
  // `s` with this partition's path among its fields.
  Status with_fields(Status s) const;
  Fields where() const { return {{"path", name_}}; }

  PgPool& pool_;
  PgNotifier& notifier_;
  const int64_t stream_id_;
  const int32_t part_;
  const std::string name_;
  std::atomic<uint64_t> segment_bytes_;
  const Clock& clock_;
  const PgAppendSettings settings_;
  std::atomic<bool> closing_{false};  // a resend loop stops at once

  mutable std::mutex mu_;
  mutable PgHead head_;  // a const read may learn of other brokers' appends
  bool head_stale_ = false;  // an append's outcome is unknown: read the head before the next one
  uint64_t maintenance_generation_ = 0;
  bool contended_ = false;   // other brokers append here too: lock the head row before writing
  Offset own_next_;          // where this broker's last append left the head
  // By producer id: the epoch and first sequence of its earliest batch here that the database failed to
  // write since its last one written (note_failed_batches()).
  struct FailedBatch {
    int16_t epoch = -1;
    int32_t first_sequence = -1;
  };
  std::unordered_map<int64_t, FailedBatch> failed_;

  mutable std::mutex listener_mu_;
  CommitListener listener_;
  GroupCommit<Pending> commit_;
};

}  // namespace streamd
