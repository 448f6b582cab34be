// The two ways storage writes files durably, each written once.
//
// replace_file: a small file (a partition's first offset, a stream's metadata, a compacted group
// offsets log) is replaced whole by writing a temp file, syncing it, renaming it over the old one and
// syncing the directory, so a crash at any point leaves the old content or the new, never a mix.
//
// ZeroFillAhead: an append-only file (a segment's log, the group offsets log) is zero-filled ahead of
// its writer, one window at a time: an fdatasync that does not change a file's size needs no journal
// commit, so the many small appends landing in already-written blocks sync several times cheaper. The
// records end at the first zero length (docs/FORMAT.md). The window follows what the file has taken:
// as large as the records already written (64 KiB at least, the maximum at most), so a file written
// once costs 64 KiB of disk and not the whole maximum, while a busy one soon fills the maximum a time.
// (A segment written through the journal skips the first window: Segment::Durability.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "server/storage/file_system.h"
#include "server/storage/status.h"

namespace streamd {

// Replaces `path` with `bytes` through `temp_path` (same directory, `dir`). `after_rename` runs once
// the rename has happened and the old file is unlinked, before the directory sync: a caller holding
// the old file open drops it there. A temp file left by a crash holds nothing the caller needs; one
// whose write or sync failed (a full disk) is removed before the error is returned.
Status replace_file(FileSystem& fs, const std::string& dir, const std::string& temp_path, const std::string& path,
                    std::string_view bytes, const std::function<void()>& after_rename = {});

// Writes zeros over [from, to) of `file`: real blocks, unlike a sparse ftruncate, so that stores through
// a mapping of them can never fault for want of space (SIGBUS on a full disk).
Status write_zeros(File& file, uint64_t from, uint64_t to);

class ZeroFillAhead {
 public:
  // The smallest window, below which a window would cost more journal commits than it saves disk.
  static constexpr uint64_t kFirstWindow = 64 << 10;

  // Fills up to `max_window` bytes at a time, never past `limit` unless a write needs it.
  explicit ZeroFillAhead(uint64_t max_window, uint64_t limit = std::numeric_limits<uint64_t>::max())
      : max_window_(max_window), limit_(limit) {}

  // Where the zeros known to be in the file end.
  uint64_t end() const { return end_; }
  // The file is known to hold zeros from its records' end up to `end` (after open, truncate or seal).
  void reset(uint64_t end) { end_ = end; }
  // Makes [written, need) zeros in `file` when `need` passes end(): writes the whole next window from
  // max(end(), written) at once, so its journal commit is paid by one sync. `written` is where the
  // file's records end, and sizes the window.
  Status ensure(File& file, uint64_t written, uint64_t need);

 private:
  uint64_t window_for(uint64_t written) const {
    return std::min(max_window_, std::max(kFirstWindow, written));
  }

  const uint64_t max_window_;
  const uint64_t limit_;
  uint64_t end_ = 0;
};

// After a write into an append-only file failed for want of space: cuts the file back to `end`, where
// its last whole write ended, and syncs the cut, so that neither a later write nor recovery sees the
// unfinished bytes. `fill`, when given, then knows of no zeros past `end`.
Status cut_unfinished_write(File& file, uint64_t end, ZeroFillAhead* fill);

}  // namespace streamd
