// GroupOffsets: the committed offsets of one stream's consumer groups (docs/SEMANTICS.md §7), kept in an
// append-only, CRC-checked commit log, <stream dir>/GROUPS (byte layout: docs/FORMAT.md §"Group offsets").
//
// Durability: commit() answers only after the fdatasync that covers its record. Commits that arrive while
// a write+sync runs are queued and go out together in the next one (group commit), so many groups
// committing at once share syncs. committed() and list() show only synced commits, so a value once seen
// survives a crash. Within and across groups, commits apply in the order commit() was called.
//
// The file is zero-filled ahead of the records (preallocate_bytes); the records end at the first zero
// length. The log only grows while the stream is open; it is rewritten compactly (one record per group and
// partition; temp file, fsync, rename, fsync dir) on open when it holds garbage or a torn tail, and
// while open when it grows past max(rewrite_min_bytes, 2 × its live size). A crash during a rewrite
// leaves the old log or the new one, and both hold every synced commit.
//
// After a failed sync, or a write that failed for any reason but want of space, the log is failed: every
// queued and later commit completes with STREAM_BACKEND_FAILED, because what reached the disk is unknown
// until the log is reopened. A write the disk had no room for fails only its group's commits (the
// unfinished write is cut away); later commits are written once space is freed.
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

#include "server/storage/durable_write.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_commit.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

namespace group_log_format {
inline constexpr char kMagic[4] = {'S', 'D', 'G', 'O'};
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kFileHeaderSize = 8;    // magic, version, 3 reserved zero bytes
inline constexpr size_t kRecordHeaderSize = 8;  // u32 length of the body, u32 CRC32C of the body
inline constexpr uint8_t kCommitType = 1;       // 0 is never valid: zero-filled space never parses
inline constexpr uint8_t kCommitWithMetadataType = 2;  // a commit that carries a metadata string
inline constexpr uint8_t kForgetType = 3;              // the group's commit on the partition is gone
inline constexpr uint32_t kMaxBodyBytes = 64 * 1024;
inline constexpr const char* kFileName = "GROUPS";
inline constexpr const char* kTempFileName = "GROUPS.tmp";
}  // namespace group_log_format

// Longest group name the log accepts; the broker refuses longer names before committing.
inline constexpr size_t kMaxGroupNameBytes = 1024;
// Longest commit metadata string (Kafka's offset.metadata.max.bytes default); refused above it.
inline constexpr size_t kMaxCommitMetadataBytes = 4096;

struct GroupOffsetsOptions {
  // The log is rewritten while open only once it exceeds this and twice its live size.
  uint64_t rewrite_min_bytes = 1 << 20;
  // How far ahead of the records the file is zero-filled: an fdatasync that does not change the file's
  // size needs no journal commit, which makes the per-commit sync several times cheaper.
  uint64_t preallocate_bytes = 256 << 10;
};

class GroupOffsets {
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
  ~GroupOffsets();
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
  void close();
  bool failed() const;
  // Bytes of the log's records (the file may be longer, zero-filled), for tests of the rewrite.
  uint64_t log_bytes() const;

 private:
  struct Pending {
    std::string group;
    PartitionId partition;
    Offset next;
    std::string metadata;
    bool forget = false;
    Done done;
  };
  struct Kept {
    Offset next;
    std::string metadata;
  };
  using Key = std::pair<std::string, int32_t>;

  GroupOffsets(FileSystem& fs, std::string dir, Executor& executor, GroupOffsetsOptions options);
  Status recover();
  Status rewrite();
  // Writes and syncs one group of queued commits and answers each (GroupCommit's write).
  void flush(std::vector<Pending>& group);
  void apply(const std::string& group, PartitionId partition, Offset next, std::string_view metadata);
  void remove(const std::string& group, PartitionId partition);

  FileSystem& fs_;
  const std::string dir_;
  const std::string path_;
  const GroupOffsetsOptions options_;

  // Touched by open, rewrite and the flush in progress only (one at a time).
  std::unique_ptr<File> file_;
  std::atomic<uint64_t> end_{0};  // end of the records
  ZeroFillAhead zero_fill_;       // the file holds zeros from end_ up to its end()

  mutable std::shared_mutex map_mu_;
  std::map<Key, Kept> offsets_;
  uint64_t live_bytes_ = 0;  // size of a compact log of offsets_

  GroupCommit<Pending> commit_;
};

}  // namespace streamd
