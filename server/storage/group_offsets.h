// GroupOffsets: the committed offsets of one stream's consumer groups (docs/SEMANTICS.md §7), kept in a
// RecordLog (record_log.h: durability, group commit, recovery and rewrites), <stream dir>/GROUPS (byte
// layout: docs/FORMAT.md §"Group offsets").
//
// commit() answers only after the fdatasync that covers its record; many groups committing at once
// share syncs. committed() and list() show only synced commits, so a value once seen survives a crash.
// Within and across groups, commits apply in the order commit() was called. A rewrite keeps one record
// per group and partition.
//
// Thread-safety: every method may be called from any thread. Callbacks run on a storage thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/record_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

namespace group_log_format {
inline constexpr RecordLogFormat kFormat{
    {'S', 'D', 'G', 'O'}, 1, "GROUPS", "GROUPS.tmp", 64 * 1024, "group offsets log"};
inline constexpr uint8_t kCommitType = 1;              // 0 is never valid: zero-filled space never parses
inline constexpr uint8_t kCommitWithMetadataType = 2;  // a commit that carries a metadata string
inline constexpr uint8_t kForgetType = 3;              // the group's commit on the partition is gone
}  // namespace group_log_format

// Longest group name the log accepts; the broker refuses longer names before committing.
inline constexpr size_t kMaxGroupNameBytes = 1024;
// Longest commit metadata string (Kafka's offset.metadata.max.bytes default); refused above it.
inline constexpr size_t kMaxCommitMetadataBytes = 4096;

using GroupOffsetsOptions = RecordLogOptions;

class GroupOffsets final : public RecordLogOwner {
 public:
  struct Entry {
    std::string group;
    PartitionId partition;
    Offset next;
    std::string metadata;  // the committer's string (Kafka's OffsetCommit); empty for native commits
    bool operator==(const Entry&) const = default;
  };
  using Done = std::function<void(Status)>;

  // Opens (creating when missing) <dir>/GROUPS and recovers it.
  static Result<std::unique_ptr<GroupOffsets>> open(FileSystem& fs, std::string dir, Executor& executor,
                                                    GroupOffsetsOptions options = {});
  ~GroupOffsets() override;
  GroupOffsets(const GroupOffsets&) = delete;
  GroupOffsets& operator=(const GroupOffsets&) = delete;

  // Records `next` as the offset `group` reads next on `partition`, replacing the previous one.
  // `done` runs after the record is synced (or with the error that prevented it).
  void commit(std::string group, PartitionId partition, Offset next, Done done) {
    commit(std::move(group), partition, next, std::string(), std::move(done));
  }
  // The same with a metadata string kept beside the offset (at most kMaxCommitMetadataBytes).
  void commit(std::string group, PartitionId partition, Offset next, std::string metadata, Done done);
  // Removes the group's commit on `partition` (nothing when it has none), durably like a commit.
  void forget(std::string group, PartitionId partition, Done done);
  // The last synced commit, or nullopt when the group never committed on the partition.
  std::optional<Offset> committed(const std::string& group, PartitionId partition) const;
  // The same with its metadata.
  std::optional<Entry> find(const std::string& group, PartitionId partition) const;
  // Every (group, partition) with its offset, ordered by group then partition.
  std::vector<Entry> list() const;

  // Waits for queued commits to finish; later commits complete with UNAVAILABLE.
  void close() {
    if (log_) log_->close();
  }
  bool failed() const { return log_->failed(); }
  // Bytes of the log's records (the file may be longer, zero-filled), for tests of the rewrite.
  uint64_t log_bytes() const { return log_->log_bytes(); }

  // RecordLogOwner.
  bool replay(std::string_view body) override;
  void live_records(std::string& out) const override;
  uint64_t live_bytes() const override { return live_bytes_; }

 private:
  struct Kept {
    Offset next;
    std::string metadata;
  };
  using Key = std::pair<std::string, int32_t>;

  GroupOffsets() = default;
  // Changes offsets_ (map_mu_ held).
  void apply(const std::string& group, PartitionId partition, Offset next, std::string_view metadata);
  void remove(const std::string& group, PartitionId partition);

  mutable std::shared_mutex map_mu_;
  std::map<Key, Kept> offsets_;
  uint64_t live_bytes_ = 0;  // size of a compact log of offsets_: changed only on the log's thread

  std::unique_ptr<RecordLog> log_;  // last: closed before the state its callbacks change goes
};

}  // namespace streamd
