// PgStream: one stream of the PostgreSQL engine — its row of streamd_streams, its partitions
// (pg_partition.h) and its group offsets (streamd_group_offsets). Commits queue in a GroupCommit on
// the engine's threads and go to the database as one upsert per group (the last commit of each
// (group, partition) in it), answered after that statement's COMMIT; committed() and groups() answer
// from the offsets this broker holds, which its own commits and the engine's refresh keep. Its policy
// is the row's `meta` as this broker last wrote or read it (PgEngine::alter, PgEngine::refresh).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/broker/pg/pg_partition.h"
#include "server/storage/shared_policy.h"

namespace streamd {

class PgStream final : public EngineStream {
 public:
  // `meta` is the row's encoding of `policy` and `created_at` (stream_meta.h); `settings` bound each
  // partition's appends. Group commits run on `executor`, the partitions' flushes on `flushes`.
  PgStream(PgPool& pool, PgNotifier& notifier, int64_t id, std::string name, const Policy& policy,
           Timestamp created_at, std::string meta, Executor& executor, Executor& flushes, const Clock& clock,
           const std::vector<PgHead>& heads, const PgAppendSettings& settings);
  ~PgStream() override;
  PgStream(const PgStream&) = delete;
  PgStream& operator=(const PgStream&) = delete;

  int64_t id() const { return id_; }
  const std::string& name() const override { return name_; }
  Policy policy() const override { return policy_.get(); }
  Timestamp created_at() const override { return created_at_; }
  int32_t partition_count() const override { return static_cast<int32_t>(partitions_.size()); }
  EnginePartition* partition(PartitionId p) const override;
  PgPartition* pg_partition(int32_t p) const { return partitions_[static_cast<size_t>(p)].get(); }
  uint64_t size_bytes() const override;

  void commit(std::string group, PartitionId partition, Offset next, std::string metadata,
              std::function<void(Status)> done) override;
  void forget(std::string group, PartitionId partition, std::function<void(Status)> done) override;
  std::optional<CommittedOffset> committed(const std::string& group, PartitionId partition) const override;
  std::vector<CommittedOffset> groups() const override;

  // Commits `o` in the database transaction open on this thread's pinned connection (PgPool::Pin; a
  // transaction's end, PgEngine::end_together); took_commit() once that transaction committed.
  Status commit_in(const TxnOffset& o);
  void took_commit(const TxnOffset& o);
  // Counts this broker's commits: a refresh read before the latest one is older than what it kept.
  uint64_t commit_generation() const;
  // Takes the group offsets read from the database (other brokers' commits and forgets: they replace
  // what this broker held) when no commit of this broker's landed since `generation`.
  void refresh_offsets(const std::vector<CommittedOffset>& offsets, uint64_t generation);
  // Answers what is queued; later appends and commits are refused UNAVAILABLE.
  void close();
  // Takes a policy of the same partition count, `meta` its row's encoding (written here or read from
  // another broker's change); the partitions begin their next segments at its segment_bytes.
  void set_policy(const Policy& policy, std::string meta);
  // Whether `meta` is the encoding this stream's policy came from (a refresh finds it unchanged).
  bool has_meta(std::string_view meta) const;

 private:
  struct Commit {
    std::string group;
    PartitionId partition;
    Offset next;
    std::string metadata;
    bool forget = false;
    std::function<void(Status)> done;
  };
  using Key = std::pair<std::string, int32_t>;
  using Kept = std::pair<Offset, std::string>;  // next, metadata
  // Takes commits (nullopt: forgets) that committed: the group offsets held here, the others told.
  void took_commits(std::map<Key, std::optional<Kept>>& last);
  void write(std::vector<Commit>& group);

  PgPool& pool_;
  PgNotifier& notifier_;
  const int64_t id_;
  const std::string name_;
  SharedPolicy policy_;
  const Timestamp created_at_;
  mutable std::mutex meta_mu_;
  std::string meta_;
  std::vector<std::unique_ptr<PgPartition>> partitions_;

  mutable std::shared_mutex offsets_mu_;
  std::map<Key, Kept> offsets_;
  uint64_t generation_ = 0;
  GroupCommit<Commit> commits_;
};

}  // namespace streamd
