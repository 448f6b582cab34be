// StreamEngine: where a broker's streams are kept (docs/ENGINES.md). The broker owns the contract of
// docs/SEMANTICS.md — names, policies, group names, routing, record sizes, backpressure and long-poll
// watches are checked and refused above this seam, once, for every engine — and hands an engine only
// calls that are valid: a stream name that passed validation, a normalized and validated policy, a
// partition inside the stream's range. An engine keeps records, offsets and group offsets, and answers
// what depends on them (OFFSET_TRIMMED, OFFSET_AHEAD, STREAM_BACKEND_FAILED).
//
// Threading: as server/broker/broker.h says of the Broker. append() and commit() never block their
// caller; their callbacks run on one of the engine's threads, never inline for a success. Every method
// may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/storage/compactor.h"
#include "server/storage/policy.h"
#include "server/storage/producer_state.h"
#include "server/storage/read_result.h"
#include "server/storage/aborted_txn.h"
#include "server/storage/status.h"
#include "server/storage/txn_log.h"
#include "server/storage/types.h"

namespace streamd {

// One partition of an engine's stream: an ordered log of batches, offsets consecutive from 0.
class EnginePartition {
 public:
  using AppendDone = std::function<void(Result<AppendRange>)>;
  // Called after each append that made new records readable, with the new end ("committed").
  using CommitListener = std::function<void(Offset next)>;

  virtual ~EnginePartition() = default;

  // Appends one encoded batch (BatchBuilder::finish): offsets in call order, the batch whole or not at
  // all; `done` runs once the engine keeps it as durably as it ever will.
  virtual void append(std::string batch, AppendDone done) = 0;
  // The long-poll hook: the broker wakes its watches from here.
  virtual void set_commit_listener(CommitListener listener) = 0;

  // server/storage/partition_log.h's read, bounds, offset_at and peek contracts, for every engine.
  virtual Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const = 0;
  // The same in ReadShape::kBatches (read_result.h): version 2 batches taken whole as one entry each.
  virtual Result<ReadResult> read_batches(Offset from, uint32_t max_records, uint64_t max_bytes) const = 0;
  // Whether a read from `from` is served without waiting for a disk.
  virtual bool reads_tail(Offset from) const = 0;
  virtual Bounds bounds() const = 0;
  // The bounds as the storage holds them now. An engine whose bounds() answers from a cache that
  // other brokers' appends may have outrun reads them again here (blocking on its storage), so that an
  // offset is refused OFFSET_AHEAD only when it is ahead of the storage, not of the cache.
  virtual Result<Bounds> fresh_bounds() const { return bounds(); }
  // Whether bounds() may lag the storage, so that fresh_bounds() says more (and may block).
  virtual bool bounds_may_lag() const { return false; }
  // An engine that looks the instant up in a database may fail (STREAM_BACKEND_FAILED).
  virtual Result<Offset> offset_at(Timestamp t) const = 0;
  // Kafka's ListOffsets of a CreateTime topic: the first retained record whose create time (a record
  // without one: its batch's appended_at in milliseconds) is at or after `t`, and that time; nullopt when
  // none is. Create times follow no order, so the lookup walks batches by their max_timestamp
  // (docs/FORMAT.md §"Create-time lookups").
  virtual Result<std::optional<TimedOffset>> offset_for_create_time(CreateTime t) const = 0;
  virtual Result<std::optional<ReadResult>> peek() const = 0;
  // The last stable offset (docs/TRANSACTIONS.md): the first offset of the earliest transaction open on
  // the partition, or the end; read_committed readers stop before it.
  virtual Offset last_stable() const = 0;
  // The aborted transactions whose records reach into [from, to), which read_committed readers skip.
  virtual Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const = 0;
  // The producers whose transaction is open on the partition (the broker's check at start for
  // transactions no coordinator knows, docs/TRANSACTIONS.md).
  virtual Result<std::vector<ProducerIdentity>> open_producers() const = 0;

  // Makes `before` the first retained offset; before <= first: nothing; before > next: OFFSET_AHEAD.
  virtual Status trim(Offset before) = 0;
  // Forgets what the policy's retain_for and retain_bytes say to forget (docs/SEMANTICS.md §3), as of
  // `now`. Returns how many units of storage went (0 when nothing did).
  virtual Result<uint64_t> apply_retention(const Policy& policy, Timestamp now) = 0;
  // docs/SEMANTICS.md §6 with the stream's compact_after, as of `now`. The broker runs one compaction
  // per partition at a time.
  virtual Result<CompactionStats> compact(std::chrono::milliseconds compact_after, Timestamp now) = 0;

  // Bytes held (what max_bytes and retain_bytes count) and the units they are kept in, for describe.
  virtual uint64_t size_bytes() const = 0;
  virtual uint32_t segment_count() const = 0;
  // Whether a write or sync failed, so that appends are refused until a restart recovers it.
  virtual bool failed() const = 0;
};

struct CommittedOffset {
  std::string group;
  PartitionId partition;
  Offset next;
  std::string metadata;  // the committer's string (Kafka's OffsetCommit); empty for native commits
};

// One stream of an engine. Its partition count never changes; its policy changes through
// StreamEngine::alter (and, on an engine other brokers share, through theirs).
class EngineStream {
 public:
  virtual ~EngineStream() = default;

  virtual const std::string& name() const = 0;
  // Normalized. A copy: a change may replace the policy at any moment, and every reader (routing,
  // backpressure, retention, compaction, describe) takes it anew when it next needs it.
  virtual Policy policy() const = 0;
  virtual Timestamp created_at() const = 0;
  virtual int32_t partition_count() const = 0;
  // nullptr when p is outside [0, partition_count()).
  virtual EnginePartition* partition(PartitionId p) const = 0;
  // Bytes held by every partition together (max_bytes counts these).
  virtual uint64_t size_bytes() const = 0;

  // Records `next` as the offset `group` reads next on `partition`, with the committer's metadata
  // string (empty for native commits); `done` runs once it is kept.
  virtual void commit(std::string group, PartitionId partition, Offset next, std::string metadata,
                      std::function<void(Status)> done) = 0;
  // Removes the group's commit on `partition` (nothing when there is none); `done` runs once that is
  // kept as durably as a commit.
  virtual void forget(std::string group, PartitionId partition, std::function<void(Status)> done) = 0;
  // The last kept commit, or nullopt when the group never committed on the partition.
  virtual std::optional<CommittedOffset> committed(const std::string& group, PartitionId partition) const = 0;
  // Every (group, partition) with its offset, ordered by group then partition.
  virtual std::vector<CommittedOffset> groups() const = 0;
};

// The engine's capacity, when it has one beyond each stream's max_bytes (the memory engine's max_bytes).
struct EngineCapacity {
  std::string key;  // the config key that sets it, named in STREAM_FULL
  uint64_t max_bytes = 0;
};

// Which partitions of a stream this broker's rotation of all-unkeyed batches takes: those p with
// p % count == index, or all of them when the stream has no partition `index`. Brokers that share an
// engine's storage take different indexes, so that their unkeyed appends go to different partitions
// and none waits on another broker's (docs/SCALING.md); a broker alone takes every partition.
// Aligned as its size, so that the std::atomic the postgres engine keeps it in is lock-free with clang
// too (which otherwise calls libatomic for an 8-byte type aligned to 4).
struct alignas(8) RotationShare {
  int32_t index = 0;
  int32_t count = 1;
  // This share on a stream of `partitions`: every partition when the stream has no partition `index`
  // or the share makes no sense.
  RotationShare over(int32_t partitions) const {
    return count < 1 || index < 0 || index >= partitions ? RotationShare{} : *this;
  }
  // Whether the share takes partition `p` (of a stream the share is over()).
  bool takes(int32_t p) const { return p % count == index; }
};

class StreamEngine {
 public:
  // Told the name of a stream that another broker sharing the engine's storage created, deleted or
  // deleted and created again: find(name) says what the engine holds now.
  using CatalogListener = std::function<void(const std::string& name)>;

  virtual ~StreamEngine() = default;

  // "file", "memory": what storage.engine names.
  virtual const char* kind() const = 0;
  // False when nothing survives a restart.
  virtual bool durable() const = 0;
  virtual std::optional<EngineCapacity> capacity() const { return std::nullopt; }
  // Bytes held by every stream together (what the capacity bounds).
  virtual uint64_t size_bytes() const = 0;

  // STREAM_EXISTS when a stream of that name exists.
  virtual Result<std::shared_ptr<EngineStream>> create(const std::string& name, const Policy& policy) = 0;
  // STREAM_NOT_FOUND when absent. A failure leaves the stream as it was, findable again.
  virtual Status remove(const std::string& name) = 0;
  // Replaces the stream's policy with what `edit` makes of the policy the engine's storage holds now
  // (policy.h's PolicyEdit), as durably as the engine keeps anything before it returns the policy
  // kept; from then on the stream's policy() answers it, and its partitions begin their next segments
  // at its segment_bytes. STREAM_NOT_FOUND when absent; edit's refusal or a failure to store leaves
  // the policy as it was. Another broker sharing the storage hears of it as of a create
  // (set_catalog_listener), with the same stream object.
  virtual Result<Policy> alter(const std::string& name, const PolicyEdit& edit) = 0;
  virtual Result<std::shared_ptr<EngineStream>> find(const std::string& name) const = 0;
  // Every stream, ordered by name.
  virtual std::vector<std::shared_ptr<EngineStream>> list() const = 0;
  // For an engine other brokers share: called on a thread of the engine's, never from inside its own
  // create() or remove(). Once this returns the previous listener is not running and is never called
  // again. An engine only one broker opens never calls it.
  virtual void set_catalog_listener(CatalogListener /*listener*/) {}
  // This broker's share of every stream's rotation (read at each all-unkeyed append).
  virtual RotationShare rotation_share() const { return {}; }
  // An idempotent producer's identity (docs/SEMANTICS.md §"Idempotent producers"): without `current`,
  // a new id at epoch 0 that this engine's storage never handed out before, restarts and crashes
  // included; with it, next_epoch(current), or a new id once its epoch is exhausted. May block.
  virtual Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current) = 0;
  // The producer states every partition holds together, and their bounds (for /metrics).
  virtual const ProducerLimits& producers() const = 0;
  // The transaction coordinator's state (docs/TRANSACTIONS.md), kept as durably as the engine keeps
  // records; nullptr when the engine takes no transactions.
  virtual TxnLog* transactions() { return nullptr; }
  // What an operation on a name this engine does not hold is answered: STREAM_NOT_FOUND, or, from an
  // engine whose storage for that name cannot be reached now (a shard that is down), why it cannot
  // tell. Never creates anything.
  virtual Status missing(const std::string& name) const {
    return Status::of(Code::kStreamNotFound, {{"stream", name}});
  }
  // The parts of the engine's storage that cannot be reached now, one line each (for /readyz); empty
  // when every part can. The broker goes on serving the streams of the others.
  virtual std::vector<std::string> unreachable() const { return {}; }
  // Finishes queued appends and commits and closes every stream; the engine is empty afterwards.
  virtual void close() = 0;
};

}  // namespace streamd
