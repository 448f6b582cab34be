// DataDir: the broker's data directory, checked and locked for the life of one broker.
//
// Opening creates the directory (and its parents, mode 0700) when missing, then refuses it with
// STREAM_DIRECTORY_UNUSABLE (fields path and reason) when it is not a directory, cannot be created, is
// writable by group or others (anyone who could inject or remove records), or is locked by another
// broker. The lock is an exclusive flock on <dir>/LOCK, held until the DataDir is destroyed; the kernel
// drops it when the process dies, so a crash never leaves a stale lock behind.
//
// Layout under the directory: docs/FORMAT.md §"Data directory".
//
// Thread-safety: immutable after open.
#pragma once

#include <memory>
#include <string>

#include "server/storage/file_system.h"
#include "server/storage/status.h"

namespace streamd {

class DataDir {
 public:
  static constexpr const char* kLockFile = "LOCK";
  static constexpr const char* kStreamsDir = "streams";
  static constexpr const char* kJournalDir = "journal";
  static constexpr const char* kProducerIdsFile = "PRODUCER_IDS";

  static Result<std::unique_ptr<DataDir>> open(FileSystem& fs, const std::string& path);

  const std::string& path() const { return path_; }
  // Holds one directory per stream (stream_store.h).
  std::string streams_dir() const { return path_ + "/" + kStreamsDir; }
  // Holds the journal shared by every partition (journal.h).
  std::string journal_dir() const { return path_ + "/" + kJournalDir; }
  // Where the next block of idempotent producer ids starts (producer_ids.h).
  std::string producer_ids_path() const { return path_ + "/" + kProducerIdsFile; }

 private:
  DataDir(std::string path, std::unique_ptr<FileLock> lock) : path_(std::move(path)), lock_(std::move(lock)) {}

  std::string path_;
  std::unique_ptr<FileLock> lock_;
};

}  // namespace streamd
