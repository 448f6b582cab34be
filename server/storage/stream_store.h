// StreamStore: the streams of one data directory — create, delete, find and list them, each opened as a
// Stream (its metadata, its partition logs and its group offsets). Layout: docs/FORMAT.md §"Data directory".
//
// Every change is durable and atomic before it is answered:
//  - create builds the stream in <streams>/.creating.<name> (metadata written atomically, partition
//    directories made, everything synced), then renames it to <streams>/<name> and syncs <streams>:
//    a crash leaves no stream or the whole stream;
//  - delete closes the stream, renames its directory to <streams>/.deleted.<name>.<n> and syncs
//    <streams> — from that rename on the stream is gone, crash or not — then removes the files;
//  - alter replaces the stream's metadata file atomically (stream_meta.h) before the stream answers
//    the new policy: a crash leaves the old policy or the new one;
//  - open finishes what a crash interrupted: leftover .creating.* and .deleted.* entries are removed,
//    and each partition replays what the journal holds and its segments lost (journal.h).
// Names are validated (stream_name.h) before any path is formed from them.
//
// Thread-safety: every method may be called from any thread. create, alter and remove are serialised
// with each other; find and list never wait for the disk. A Stream stays usable (reads through open files) while
// any caller holds it, even after remove; appends and commits to a removed stream fail UNAVAILABLE.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/storage/clock.h"
#include "server/storage/data_dir.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_offsets.h"
#include "server/storage/journal.h"
#include "server/storage/open_partitions.h"
#include "server/storage/partition_log.h"
#include "server/storage/partition_slot.h"
#include "server/storage/policy.h"
#include "server/storage/producer_ids.h"
#include "server/storage/producer_state.h"
#include "server/storage/shared_policy.h"
#include "server/storage/status.h"
#include "server/storage/stream_meta.h"

namespace streamd {

// One open stream. Its partition count never changes; its policy changes through StreamStore::alter.
class Stream {
 public:
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& name() const { return name_; }
  Policy policy() const { return policy_.get(); }  // normalized; a copy, since alter may replace it
  Timestamp created_at() const { return created_at_; }
  int32_t partition_count() const { return static_cast<int32_t>(partitions_.size()); }
  // nullptr when p is outside [0, partition_count()).
  PartitionSlot* partition(PartitionId p) const;
  GroupOffsets& groups() const { return *groups_; }
  // Bytes held by every partition together (max_bytes counts these).
  uint64_t size_bytes() const;
  // The directory of the stream; a removed stream's directory no longer exists.
  const std::string& dir() const { return dir_; }

  // UNKNOWN_PARTITION with fields stream, partition and partitions.
  Status unknown_partition(PartitionId p) const;

 private:
  friend class StreamStore;
  Stream(std::string name, std::string dir, const StreamMeta& meta);
  void close();
  // Takes `policy` (same partition count): readers see it, and each partition begins its next
  // segments at its segment_bytes.
  void set_policy(const Policy& policy);

  const std::string name_;
  const std::string dir_;
  const Timestamp created_at_;
  SharedPolicy policy_;
  std::vector<std::shared_ptr<PartitionSlot>> partitions_;
  std::unique_ptr<GroupOffsets> groups_;
};

struct StreamStoreOptions {
  // Options for every partition; segment_bytes is replaced by each stream's policy.
  PartitionOptions partition;
  GroupOffsetsOptions groups;
  // The most files the partitions keep open at once (open_partitions.h); 0: no limit.
  uint64_t max_open_files = 0;
  // Small groups of every partition are made durable by one shared journal (journal.h); off, each
  // group syncs its own segment. A journal left by an earlier run is replayed either way.
  bool journal = true;
  JournalOptions journal_options;
  // How many idempotent producers' states the partitions keep (producer_state.h).
  ProducerBounds producers;
};

class StreamStore {
 public:
  static constexpr const char* kCreatingPrefix = ".creating.";
  static constexpr const char* kDeletedPrefix = ".deleted.";

  // Locks and checks the data directory (data_dir.h), finishes interrupted creates and deletes, and
  // opens every stream in it.
  static Result<std::unique_ptr<StreamStore>> open(FileSystem& fs, const std::string& data_dir, Executor& executor,
                                                   const Clock& clock, StreamStoreOptions options = {});
  ~StreamStore();

  // STREAM_MISCONFIGURED for a bad name (field name) or policy (the policy's field); STREAM_EXISTS when
  // a stream of that name exists.
  Result<std::shared_ptr<Stream>> create(const std::string& name, const Policy& policy);
  // STREAM_MISCONFIGURED for a bad name, STREAM_NOT_FOUND when absent. Waits for the stream's queued
  // appends and commits to finish first.
  Status remove(const std::string& name);
  // Replaces the stream's policy with what `edit` makes of it, durably (the metadata file replaced
  // atomically) before the stream answers it; returns the policy kept. STREAM_MISCONFIGURED for a bad
  // name, STREAM_NOT_FOUND when absent, edit's refusal, or STREAM_BACKEND_FAILED when the file could not
  // be replaced: then the stream keeps its old policy, unless the new file was already renamed into
  // place (only its directory's sync failed), when the stream takes the policy a restart would read.
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit);
  // STREAM_MISCONFIGURED for a bad name, STREAM_NOT_FOUND when absent.
  Result<std::shared_ptr<Stream>> find(const std::string& name) const;
  // Every stream, ordered by name.
  std::vector<std::shared_ptr<Stream>> list() const;
  size_t size() const;
  // Closes every stream (queued appends and commits finish first). The store is empty afterwards.
  void close();

  const std::string& streams_dir() const { return streams_dir_; }
  const OpenPartitions& open_partitions() const { return *open_partitions_; }
  // A producer id this data directory never handed out before (producer_ids.h).
  Result<int64_t> next_producer_id() { return producer_ids_->next(); }
  const ProducerLimits& producers() const { return *producer_limits_; }

 private:
  StreamStore(FileSystem& fs, std::unique_ptr<DataDir> data_dir, Executor& executor, const Clock& clock,
              StreamStoreOptions options);
  Status recover();
  // Gives each partition what the journal holds and its segments lost, then starts the journal.
  Status replay_journal();
  Status replay_partition(const std::string& key, const std::vector<std::string>& batches);
  Result<std::shared_ptr<Stream>> open_stream(const std::string& name);
  Status remove_tree(const std::string& path);
  std::string stream_dir(const std::string& name) const { return streams_dir_ + "/" + name; }

  FileSystem& fs_;
  std::unique_ptr<DataDir> data_dir_;
  const std::string streams_dir_;
  Executor& executor_;
  const Clock& clock_;
  // Before options_, whose partition options point at it.
  const std::shared_ptr<ProducerLimits> producer_limits_;
  const StreamStoreOptions options_;
  const std::shared_ptr<OpenPartitions> open_partitions_;
  std::unique_ptr<Journal> journal_;  // null when off
  std::unique_ptr<ProducerIds> producer_ids_;

  std::mutex admin_mu_;  // serialises create, alter and remove
  mutable std::shared_mutex streams_mu_;
  std::map<std::string, std::shared_ptr<Stream>> streams_;
  std::atomic<uint64_t> tombstone_seq_{0};
};

}  // namespace streamd
