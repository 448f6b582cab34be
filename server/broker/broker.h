// Broker: every operation of docs/SEMANTICS.md §2 over the streams of one StreamEngine (stream_engine.h),
// independent of the network. server/net maps protocol messages onto these calls. Everything the
// contract refuses is refused here, before an engine sees it, so every engine refuses alike.
//
// Threading contract:
//  - The synchronous operations may touch the disk (create, alter, delete, trim and compact sync files); a
//    caller that serves the network runs them on a storage thread, never on its loop.
//  - append() and commit() are asynchronous (group commit): their callbacks run on a storage thread,
//    or inline for an immediate refusal, or on the scheduler's thread for an append refused STREAM_FULL
//    after waiting block_timeout. They never block the caller.
//  - read(), peek() and offset_at() take no lock across I/O and may run on any thread; records no longer
//    in the page cache make them wait for the disk (a page fault on the log's mapping), so a caller
//    that serves the network runs them off its loop. watch() is the long-poll hook.
//  - All methods are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/isolation.h"
#include "server/broker/policy_change.h"
#include "server/broker/txn/txn_coordinator.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/partition_log.h"
#include "server/storage/policy.h"
#include "server/storage/record_batch.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// Delayed callbacks without holding a thread: block_timeout waits and the retention period.
// server/net implements it on the io_context; tests drive a manual one.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Runs fn after `delay` on the scheduler's thread; the returned function cancels it (fn then never runs).
  virtual std::function<void()> schedule_after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

struct BrokerOptions {
  bool auto_create_streams = true;
  Policy default_policy;
  // The most partitions the broker holds across all its streams. A create (or auto-create) that would
  // pass it is refused STREAM_MISCONFIGURED naming `partitions`, before anything is made: each partition
  // costs files, memory and start-up time, so one request must not be able to ask for millions.
  int64_t max_partitions = 100000;
  // How often retention (retain_for, retain_bytes) is applied; 0 disables the background task.
  std::chrono::milliseconds retention_check_period{5000};
  // Opt-in: compact every stream with a compact_after this often; 0 disables.
  std::chrono::milliseconds compaction_period{0};
  // How often transactions past their timeout are aborted; 0 disables the background task.
  std::chrono::milliseconds transaction_check_period{1000};
  TxnLimits transactions;
  PartitionOptions partition_options;  // segment_bytes is taken from each stream's policy
  // Where the retention and compaction passes run. They wait for a partition's flush to finish before
  // rolling its segment, so they must never hold a thread of the storage executor, which that flush
  // needs (with every storage thread so held, no flush could run again). nullptr: a thread of the
  // broker's own.
  Executor* maintenance = nullptr;
};

// A record as a producer sent it; views must stay valid until append() returns (it encodes at once).
struct RecordInput {
  std::string_view key;
  std::string_view payload;
  std::vector<HeaderView> headers;
};

struct PartitionDescription {
  PartitionId partition;
  Bounds bounds;
  uint64_t bytes = 0;
  uint32_t segments = 0;
  // A write or sync of it failed: it refuses appends until a restart recovers it (what reached the
  // disk is unknown until then; docs/SEMANTICS.md).
  bool failed = false;
  Offset last_stable{};  // where read_committed reads stop (docs/TRANSACTIONS.md): at most bounds.next
  // This broker's rotation of all-unkeyed batches takes it (stream_engine.h's RotationShare): a
  // producer that chooses partitions itself keeps each partition written through one broker by sending
  // its unkeyed batches to these (docs/SCALING.md §"Unkeyed appends across brokers").
  bool in_rotation = true;
};

struct StreamDescription {
  std::string name;
  Policy policy;  // normalized
  Timestamp created_at;
  std::vector<PartitionDescription> partitions;
};

struct StreamSummary {
  std::string name;
  int32_t partitions = 0;
};

struct AppendResult {
  PartitionId partition;
  AppendRange range;
};

// What an append may say besides its records: an idempotent producer's stamp (docs/SEMANTICS.md §11),
// with the partition it names.
struct AppendOptions {
  // No routing: the batch goes to this partition, and a keyed record must be one its key places there
  // (PARTITIONS_MIXED otherwise). Unset: keyed records by their key, unkeyed ones in rotation.
  std::optional<PartitionId> partition;
  ProducerFields producer;  // id -1: none
};

struct ReadCursor {
  PartitionId partition;
  Offset from;
};

struct PartitionEnds {
  Bounds bounds;
  Offset last_stable;  // at most bounds.next
};

struct PartitionRead {
  PartitionId partition;
  Status status;      // OFFSET_TRIMMED, OFFSET_AHEAD or UNKNOWN_PARTITION for this cursor alone
  ReadResult result;  // empty when status is an error
};

struct GroupOffset {
  std::string group;
  PartitionId partition;
  Offset committed;
  Offset next;
  uint64_t lag = 0;      // next - committed when committed < next, else 0
  std::string metadata;  // the committer's string (Kafka's OffsetCommit); empty for native commits
};

struct CompactResult {
  int64_t scanned = 0;
  int64_t kept = 0;
  int64_t dropped = 0;
};

using WatchId = uint64_t;

class StreamEngine;

class Broker {
 public:
  // A broker over the file engine of `data_dir` (file_engine.h), with options.partition_options.
  static Result<std::unique_ptr<Broker>> open(FileSystem& fs, std::string data_dir, BrokerOptions options,
                                              Executor& storage, const Clock& clock, Scheduler& scheduler);
  // A broker over `engine`, which it closes with itself. `storage` runs the auto-creations.
  static Result<std::unique_ptr<Broker>> open(std::unique_ptr<StreamEngine> engine, BrokerOptions options,
                                              Executor& storage, const Clock& clock, Scheduler& scheduler);
  ~Broker();

  Result<StreamDescription> create_stream(const std::string& name, const Policy& policy, bool if_not_exists,
                                          bool* created = nullptr);
  // Changes the stream's policy as `change` says (policy_change.h; docs/SEMANTICS.md §3, "Changing a
  // policy"), durably on every engine before it returns the policy now in force: from then on routing,
  // backpressure, retention, compaction and describe go by it. With validate_only, checks the change
  // against the policy in force and returns the policy it would make, changing nothing.
  // STREAM_MISCONFIGURED naming the field (the stream's name, a value, or another partition count),
  // STREAM_NOT_FOUND, or the engine's failure to store it (STREAM_BACKEND_FAILED).
  Result<Policy> alter_stream(const std::string& name, const PolicyChange& change, bool validate_only = false);
  // if_exists: absent is not an error (deleted == false).
  Status delete_stream(const std::string& name, bool if_exists = false, bool* deleted = nullptr);
  std::vector<StreamSummary> list_streams() const;
  Result<StreamDescription> describe_stream(const std::string& name) const;

  void append(const std::string& stream, const std::vector<RecordInput>& records,
              std::function<void(Result<AppendResult>)> done) {
    append(stream, records, AppendOptions{}, std::move(done));
  }
  void append(const std::string& stream, const std::vector<RecordInput>& records, const AppendOptions& options,
              std::function<void(Result<AppendResult>)> done);

  // An append whose producer chose the partition (Kafka's contract): no routing and no auto-create;
  // the size refusals of append(), UNKNOWN_PARTITION outside the stream's partitions, and with
  // enforce_placement PARTITIONS_MIXED for a keyed record partition_of places elsewhere.
  void append_to_partition(const std::string& stream, PartitionId partition, bool enforce_placement,
                           const std::vector<RecordInput>& records, std::function<void(Result<AppendResult>)> done);

  // The same for a batch the caller encoded (BatchBuilder, unsealed) from `records`, which are checked as
  // above: the Kafka Produce, whose batch keeps its records' nulls and create times as they came.
  void append_batch_to_partition(const std::string& stream, PartitionId partition, bool enforce_placement,
                                 const std::vector<RecordInput>& records, std::string batch,
                                 std::function<void(Result<AppendResult>)> done);

  // One PartitionRead per cursor, in cursor order. Stream-level errors (not found, max_records <= 0)
  // fail the whole call. What a transaction wrote is seen as `isolation` says (isolation.h); `shape`
  // as read_result.h says.
  Result<std::vector<PartitionRead>> read(const std::string& stream, const std::vector<ReadCursor>& cursors,
                                          int32_t max_records, uint64_t max_bytes,
                                          Isolation isolation = Isolation::kReadCommitted,
                                          ReadShape shape = ReadShape::kRecords) const;
  // True when every cursor reads what its partition wrote last (EnginePartition::reads_tail): the read
  // will not wait for the disk. Also true when the stream or a partition is unknown (read() refuses
  // at once).
  bool reads_tail(const std::string& stream, const std::vector<ReadCursor>& cursors) const;
  // Calls wake once, from any thread, as soon as any cursor's partition has a synced record at or after
  // its cursor (at read_committed: below its last stable offset) — at once if one already does.
  // unwatch() cancels; wake may still race in and must be harmless then.
  Result<WatchId> watch(const std::string& stream, const std::vector<ReadCursor>& cursors,
                        std::function<void()> wake, Isolation isolation = Isolation::kReadCommitted);
  void unwatch(WatchId id);

  Result<Bounds> bounds(const std::string& stream, PartitionId partition) const;
  // The transaction coordinator (docs/TRANSACTIONS.md); nullptr when the engine takes no transactions.
  TxnCoordinator* transactions() const;
  // A transactional producer's batch (Kafka's Produce with a transactional id): appended as
  // append_batch_to_partition() appends, once the coordinator says the partition is in the producer's
  // open transaction.
  void append_transactional(const std::string& transactional_id, ProducerIdentity producer,
                            const std::string& stream, PartitionId partition, bool enforce_placement,
                            const std::vector<RecordInput>& records, std::string batch,
                            std::function<void(Result<AppendResult>)> done);
  // A native transactional batch (docs/TRANSACTIONS.md §"Native transactions"): `options` name the
  // producer and the partition of an existing stream; the partition joins the producer's open
  // transaction (beginning one when none is open), then the records are appended as transactional.
  // A batch the partition would refuse is refused before it joins.
  void append_in_transaction(const std::string& transactional_id, const std::string& stream,
                             const std::vector<RecordInput>& records, const AppendOptions& options,
                             std::function<void(Result<AppendResult>)> done);
  // The bounds and the last stable offset (docs/TRANSACTIONS.md) of a partition, from one lookup.
  Result<PartitionEnds> ends(const std::string& stream, PartitionId partition) const;
  // The last retained entry (a one-entry ReadResult), or nullopt when the partition is empty.
  Result<std::optional<ReadResult>> peek(const std::string& stream, PartitionId partition) const;
  Result<Offset> offset_at(const std::string& stream, PartitionId partition, Timestamp t) const;
  // Kafka's ListOffsets by time (docs/KAFKA.md §ListOffsets), by the stream's timestamp type: the first
  // record whose timestamp (CreateTime: its create time, or its batch's appended_at where it has none;
  // LogAppendTime: appended_at) is at or after `millis`, with that timestamp in milliseconds; nullopt
  // when every record's is earlier.
  Result<std::optional<TimedOffset>> offset_for_time(const std::string& stream, PartitionId partition,
                                                     int64_t millis) const;
  // The stream's policy, normalized.
  Result<Policy> policy(const std::string& stream) const;
  // Returns the partition's first offset afterwards.
  Result<Offset> trim(const std::string& stream, PartitionId partition, Offset before);
  // An idempotent producer's identity (StreamEngine::init_producer): may block on the storage.
  Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current);
  // The producer states the partitions hold, with their bounds and evictions (for /metrics).
  const ProducerLimits& producers() const;
  Result<CompactResult> compact(const std::string& stream, PartitionId partition);

  void commit(const std::string& stream, const std::string& group, PartitionId partition, Offset next,
              std::function<void(Status)> done);
  Result<Offset> committed(const std::string& stream, const std::string& group, PartitionId partition) const;
  Result<std::vector<GroupOffset>> list_groups(const std::string& stream) const;

  // Kafka's OffsetCommit (docs/KAFKA.md §Groups): keeps `next` with `metadata` (at most
  // kMaxCommitMetadataBytes) and never checks the offset against the log, as Kafka never does; the
  // group name and partition are checked as commit() checks them.
  void store_offset(const std::string& stream, const std::string& group, PartitionId partition, Offset next,
                    std::string metadata, std::function<void(Status)> done);
  // Removes the group's commit on the partition (Kafka's OffsetDelete and DeleteGroups); nothing when
  // there is none.
  void forget_offset(const std::string& stream, const std::string& group, PartitionId partition,
                     std::function<void(Status)> done);
  // committed() with the commit's metadata and the partition's end; nullopt when the group never
  // committed there.
  Result<std::optional<GroupOffset>> commit_of(const std::string& stream, const std::string& group,
                                                   PartitionId partition) const;

  size_t stream_count() const;
  // The parts of the engine's storage that cannot be reached now (StreamEngine::unreachable).
  std::vector<std::string> unreachable_storage() const;
  // One retention pass over every stream now, on the caller's thread (the background task runs the same
  // pass every retention_check_period on the storage executor).
  Status apply_retention();
  // Finishes queued appends and commits, closes every partition cleanly.
  void close();

 private:
  struct Impl;
  explicit Broker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamd
