// FaultInjectionFileSystem: a FileSystem for tests that simulates a crash and a failing disk, in the
// manner of leveldb's FaultInjectionTestEnv. It wraps a base FileSystem (normally posix_file_system())
// and passes every call through, while it
//
//  - remembers, per file opened through it, the content as of the file's last successful File::sync()
//    or MappedRegion::sync(); drop_unsynced_data() puts every such file back to that content, as if
//    the machine had lost power. A file created through it and never synced is removed instead;
//  - fails the next write_at or sync (optionally only on paths containing a substring) with
//    Status::io_error and a chosen errno (ENOSPC, EIO), writing or syncing nothing;
//  - fails every read_at (optionally only on paths containing a substring) with a chosen errno while
//    told to, like a disk whose sector cannot be read until it is remapped;
//  - counts writes and syncs, per path, so tests can check that group commit shares syncs.
//
// Model and simplifications:
//  - Directory entries are durable at once: creations, renames and removals survive
//    drop_unsynced_data() whether or not sync_dir() ran (only file contents are rolled back).
//  - A lost write is lost whole: no torn sector is kept. Tests of torn tails damage bytes themselves.
//  - Stores through a live mapping count as unsynced until a sync of the file or the region.
//  - The synced content of every file written through it is kept in memory: meant for test-sized data.
//  - Files that existed before and were only read are never touched by drop_unsynced_data().
//
// Thread-safety: like any FileSystem, usable from any thread. drop_unsynced_data() must run with no
// File or MappedRegion from this object still open (the crashed process is gone).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/file_system.h"

namespace streamd::testing {

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem& base = posix_file_system());
  ~FaultInjectionFileSystem() override;

  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
  Status remove(const std::string& path) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status sync_dir(const std::string& dir) override;
  Status create_dir(const std::string& path) override;
  Status remove_dir(const std::string& path) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  bool exists(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> lock(const std::string& path) override;

  // Restores every file written through this object to its last synced content and removes the files
  // created and never synced. The files stay tracked: the next crash rolls back to the same point.
  Status drop_unsynced_data();

  // The next write_at (resp. File::sync or MappedRegion::sync) on a path containing `path_filter`
  // (every path when empty) fails with errno `err` and has no effect. One failure per call.
  void fail_next_write(int err, std::string path_filter = {});
  void fail_next_sync(int err, std::string path_filter = {});
  // The next open that would create a file (no file at the path yet) on a path containing
  // `path_filter` fails with errno `err` and creates nothing: a directory or inode table that is full.
  void fail_next_create(int err, std::string path_filter = {});

  // Every read_at on a path containing `path_filter` (every path when empty) fails with errno `err`,
  // reading nothing, until stop_failing_reads(). read_faults() counts the reads so failed.
  void fail_reads(int err, std::string path_filter = {});
  void stop_failing_reads();
  uint64_t read_faults() const;

  // Counts of successful calls on paths containing `path_filter` (every path when empty).
  uint64_t writes(std::string_view path_filter = {}) const;
  uint64_t syncs(std::string_view path_filter = {}) const;  // File::sync and MappedRegion::sync
  uint64_t dir_syncs() const;
  void reset_counters();

 private:
  // The durable state of one file opened through this object; shared by its open handles.
  struct FileState;
  class FaultFile;
  class FaultRegion;
  struct Fault {
    bool armed = false;
    int err = 0;
    std::string filter;
  };
  struct Counts {
    uint64_t writes = 0;
    uint64_t syncs = 0;
  };
  // Consumes an armed fault matching `path`: the Status the faulty call returns, ok when none.
  Status take_fault(Fault& fault, const std::string& path, std::string_view op);
  // The Status a read of `path` returns while reads fail, ok otherwise.
  Status read_fault(const std::string& path);
  void count_write(const std::string& path);
  void count_sync(const std::string& path);

  FileSystem& base_;
  mutable std::mutex mu_;
  // Tracked files by current path; a rename moves the entry (a directory's, every entry inside it), a
  // removal drops it.
  std::map<std::string, std::shared_ptr<FileState>> files_;
  Fault write_fault_;
  Fault sync_fault_;
  Fault read_fault_;  // stays armed until stop_failing_reads()
  uint64_t read_faults_ = 0;
  Fault create_fault_;
  std::map<std::string, Counts> counts_;
  uint64_t dir_syncs_ = 0;
};

}  // namespace streamd::testing
