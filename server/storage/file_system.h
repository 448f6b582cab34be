// The seam between storage and the operating system. Storage code reaches files only through
// FileSystem, so tests can substitute a fault-injecting implementation (fault_injection_fs.h) that
// forgets unsynced writes or fails the next write or sync with ENOSPC/EIO.
//
// Thread-safety: a FileSystem may be used from any thread. A File is used by one writer at a time;
// read_at may run concurrently with writes to other ranges (pread semantics).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// A shared, writable memory mapping of the first size() bytes of a file. Unmapped on destruction.
class MappedRegion {
 public:
  virtual ~MappedRegion() = default;
  virtual char* data() = 0;
  virtual size_t size() const = 0;
  // msync: makes the mapped bytes durable.
  virtual Status sync() = 0;
};

class File {
 public:
  virtual ~File() = default;
  virtual const std::string& path() const = 0;
  // Writes all of data at pos (pwrite, retried until complete).
  virtual Status write_at(FilePosition pos, std::string_view data) = 0;
  // Writes the pieces back to back from pos in one call (pwritev), as write_at of their concatenation
  // would, without concatenating them first.
  virtual Status write_vectored(FilePosition pos, std::span<const std::string_view> pieces) = 0;
  // Starts writing [pos, pos + length) to the device without waiting for it (sync_file_range): the
  // device works while later bytes are still being copied in. Only a hint; durability needs sync().
  virtual void start_writeback(FilePosition pos, uint64_t length) = 0;
  // Reads up to n bytes at pos into out; fewer only at end of file.
  virtual Result<size_t> read_at(FilePosition pos, char* out, size_t n) const = 0;
  // fdatasync: written data, and the metadata needed to read it, reach the device.
  virtual Status sync() = 0;
  virtual Status truncate(uint64_t size) = 0;
  virtual Result<uint64_t> size() const = 0;
  // Maps [0, length) shared and writable; the file must already be at least length bytes long.
  virtual Result<std::unique_ptr<MappedRegion>> map(size_t length) = 0;
};

enum class OpenMode {
  kReadOnly,      // must exist
  kReadWrite,     // must exist
  kCreate,        // read-write, created when missing
  kCreateNew,     // read-write, must not exist
};

// An exclusive advisory lock on a file (flock); released on destruction.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) = 0;
  virtual Status remove(const std::string& path) = 0;
  // Atomically replaces `to` with `from` (rename(2)); callers sync the directory afterwards.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // fsync on the directory, making creations, renames and removals inside it durable.
  virtual Status sync_dir(const std::string& dir) = 0;
  // mkdir with mode 0700; ok when the directory already exists.
  virtual Status create_dir(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status remove_dir(const std::string& path) = 0;
  // Names (not paths) of the entries of dir, excluding "." and "..", unordered.
  virtual Result<std::vector<std::string>> list_dir(const std::string& dir) = 0;
  virtual bool exists(const std::string& path) = 0;
  // Takes an exclusive, non-blocking lock on path (created when missing).
  virtual Result<std::unique_ptr<FileLock>> lock(const std::string& path) = 0;
};

// The process-wide POSIX implementation.
FileSystem& posix_file_system();

}  // namespace streamd
