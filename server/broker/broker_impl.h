// Broker::Impl: the broker's parts, shared by the files that implement its operations (broker.cc for
// the stream catalogue, append.cc, partition_ops.cc, groups.cc). Each part owns its state and its
// locks: the engine, the open streams (StreamCatalog), the appends waiting for an auto-create (PendingCreations),
// the gate that keeps storage work from outliving close() (TaskGate), the long-poll watches
// (WatchTable) and the periodic retention and compaction passes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/broker/pending_creations.h"
#include "server/broker/periodic_task.h"
#include "server/broker/stream_catalog.h"
#include "server/broker/task_gate.h"
#include "server/broker/txn/partition_joins.h"
#include "server/broker/watchers.h"
#include "server/broker/stream_engine.h"

namespace streamd {

struct Broker::Impl {
  Impl(std::unique_ptr<StreamEngine> stream_engine, BrokerOptions broker_options, Executor& storage_executor,
       const Clock& broker_clock, Scheduler& broker_scheduler)
      : engine(std::move(stream_engine)),
        options(std::move(broker_options)),
        storage(storage_executor),
        clock(broker_clock),
        scheduler(broker_scheduler) {}

  std::unique_ptr<StreamEngine> engine;
  const BrokerOptions options;
  Executor& storage;
  const Clock& clock;
  Scheduler& scheduler;

  std::unique_ptr<StreamCatalog> catalog;
  PendingCreations creating;
  std::shared_ptr<TaskGate> gate = std::make_shared<TaskGate>();
  std::shared_ptr<WatchTable> watches = std::make_shared<WatchTable>();
  std::unique_ptr<PeriodicTask> retention_task;
  std::unique_ptr<PeriodicTask> compaction_task;
  // Transactions, when the engine keeps them (transactions.cc).
  std::unique_ptr<TxnEffects> txn_effects;
  std::unique_ptr<TxnCoordinator> txns;
  std::unique_ptr<PartitionJoins> txn_joins;  // native transactional appends (append_in_transaction)
  std::unique_ptr<PeriodicTask> txn_task;

  // The open stream and the partition a call names.
  struct Target {
    std::shared_ptr<OpenStream> opened;
    EnginePartition* log = nullptr;
  };

  // The catalog's find(), then UNKNOWN_PARTITION.
  Result<Target> target(const std::string& stream, PartitionId partition) const;

  void append_to(const std::shared_ptr<OpenStream>& opened, const std::vector<RecordInput>& records,
                 const AppendOptions& options, std::function<void(Result<AppendResult>)> done);
  // Encodes `records` as one batch (stamped with `producer`) and appends it to partition `p` of `opened`
  // (routing already done).
  void write_batch(const std::shared_ptr<OpenStream>& opened, PartitionId p, const std::vector<RecordInput>& records,
                   const ProducerFields& producer, std::function<void(Result<AppendResult>)> done);
  // Appends an encoded batch to partition `p` of `opened`, through backpressure.
  void write_encoded(const std::shared_ptr<OpenStream>& opened, PartitionId p, std::string batch,
                     std::function<void(Result<AppendResult>)> done);
  Result<CompactResult> compact(const OpenStream& opened, PartitionId partition);
  Status retention_pass();
  void compaction_pass();
  // Starts the coordinator over the engine's transactions: finishes what a restart found decided and
  // arms the timeout check.
  void open_transactions(Executor& maintenance);
  // At start: aborts every transaction a partition holds open that no transactional id's open
  // transaction includes (its coordinator state was lost), which would hold read_committed readers
  // back for good. Blocks until the markers are written.
  void abort_unknown_transactions();
  // BrokerOptions::maintenance when none was given. Declared last, so destroyed first: a pass still
  // queued runs while everything it touches is alive.
  std::unique_ptr<ThreadPool> own_maintenance;
};

// The stream and partition an error happened on, added to its fields.
Status with_place(Status status, const std::string& stream, PartitionId partition);
// UNKNOWN_PARTITION with fields stream, partition and partitions.
Status unknown_partition(const EngineStream& stream, PartitionId partition);

}  // namespace streamd
