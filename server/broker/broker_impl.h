// Broker::Impl: the broker's state, shared by the files that implement its operations (broker.cc for
// the stream catalogue, append.cc, partition_ops.cc, groups.cc).
//
// Each open stream is an OpenStream: the storage Stream plus what the broker keeps beside it — the rotation
// for unkeyed batches, the backpressure state, the long-poll watchers of each partition and a lock
// that keeps two compactions of one partition apart. Open streams are shared: an operation that found one
// keeps it alive, and a delete only unlists it.
//
// Locking: admin_mu serialises create and delete (and auto-create); streams_mu guards the map. Neither is
// held while waiting for the disk except by create and delete themselves.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/broker/backpressure.h"
#include "server/broker/broker.h"
#include "server/broker/periodic_task.h"
#include "server/broker/task_gate.h"
#include "server/broker/watchers.h"
#include "server/storage/stream_store.h"

namespace streamd {

struct OpenStream {
  std::shared_ptr<Stream> stream;
  std::atomic<uint64_t> rotation{0};
  std::shared_ptr<Backpressure> backpressure;  // null when the policy sets no max_bytes
  std::vector<std::shared_ptr<PartitionWatchers>> watchers;
  std::vector<std::unique_ptr<std::mutex>> compaction_mu;

  const std::string& name() const { return stream->name(); }
  // Room may have been freed (trim, retention, compaction).
  void room_freed() const {
    if (backpressure) backpressure->room_freed();
  }
  // The stream is going away: waiters are refused, watchers woken.
  void shut(const Status& status) const;
};

struct Broker::Impl {
  Impl(FileSystem& file_system, BrokerOptions broker_options, Executor& storage_executor, const Clock& broker_clock,
       Scheduler& broker_scheduler)
      : fs(file_system),
        options(std::move(broker_options)),
        storage(storage_executor),
        clock(broker_clock),
        scheduler(broker_scheduler) {}

  FileSystem& fs;
  const BrokerOptions options;
  Executor& storage;
  const Clock& clock;
  Scheduler& scheduler;

  std::unique_ptr<StreamStore> store;
  std::shared_ptr<TaskGate> gate = std::make_shared<TaskGate>();
  std::shared_ptr<WatchTable> watches = std::make_shared<WatchTable>();
  std::unique_ptr<PeriodicTask> retention_task;
  std::unique_ptr<PeriodicTask> compaction_task;

  // Appends to streams being auto-created, in call order, until the creation finishes: they must take
  // offsets in the order they were sent (SPEC.md §5), and so must any append that arrives meanwhile.
  struct QueuedAppend {
    std::shared_ptr<const struct OwnedBatch> batch;
    std::function<void(Result<AppendResult>)> done;
  };
  std::mutex creating_mu;
  std::map<std::string, std::vector<QueuedAppend>> creating;
  std::atomic<size_t> creating_count{0};

  std::mutex admin_mu;
  mutable std::shared_mutex streams_mu;
  std::map<std::string, std::shared_ptr<OpenStream>> streams;

  // The opened and the partition log a call names.
  struct Target {
    std::shared_ptr<OpenStream> opened;
    PartitionLog* log = nullptr;
  };

  std::shared_ptr<OpenStream> open_stream(std::shared_ptr<Stream> stream);
  // STREAM_MISCONFIGURED (bad name) or STREAM_NOT_FOUND.
  Result<std::shared_ptr<OpenStream>> find(const std::string& name) const;
  // find(), then UNKNOWN_PARTITION.
  Result<Target> target(const std::string& stream, PartitionId partition) const;
  // The opened, creating the stream with the default policy when absent (auto-create).
  Result<std::shared_ptr<OpenStream>> find_or_create(const std::string& name);
  std::vector<std::shared_ptr<OpenStream>> all_streams() const;

  void append_to(const std::shared_ptr<OpenStream>& opened, const std::vector<RecordInput>& records,
                 std::function<void(Result<AppendResult>)> done);
  Result<CompactResult> compact(const OpenStream& opened, PartitionId partition);
  Status retention_pass();
  void compaction_pass();
};

// The stream and partition an error happened on, added to its fields.
Status with_place(Status status, const std::string& stream, PartitionId partition);

}  // namespace streamd
