// RecordLog: a small state kept as an append-only, CRC-checked log of records in one file, which its
// owner replays on open (the consumer groups' GROUPS, docs/FORMAT.md §"Group offsets"). The owner
// defines the records' bodies; the log frames, writes, syncs, recovers and compacts them.
//
//     file   = header record*            header = magic(4) u8(version) 00 00 00
//     record = u32(length) u32(CRC32C of body) body
//
// Durability: append() answers only after the fdatasync that covers its record. Records appended while a
// write+sync runs are queued and go out together in the next one (group commit); their `done` run in
// the order append() was called, each before the next, so an owner that applies its change in `done`
// applies them in that order and shows only what is durable.
//
// The file is zero-filled ahead of the records (preallocate_bytes); the records end at the first zero
// length, and a body's first byte (its type, chosen by the owner) is never 0. On open a torn last record
// is cut away, and a damaged one followed by more records drops them too, loudly. The log is rewritten
// compactly from the owner's live records (temp file, fsync, rename, fsync dir) on open when it holds a
// torn tail or garbage, and while open when it grows past max(rewrite_min_bytes, 2 × the live size). A
// crash during a rewrite leaves the old log or the new one, and both hold every synced record.
//
// After a failed sync, or a write that failed for any reason but want of space, the log is failed: every
// queued and later append completes with STREAM_BACKEND_FAILED, because what reached the disk is unknown
// until the log is reopened. A write the disk had no room for fails only its group's appends (the
// unfinished write is cut away); later ones are written once space is freed.
//
// Thread-safety: append() may be called from any thread; `done` and the owner's live_records() run on a
// storage thread, one at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/durable_write.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_commit.h"
#include "server/storage/status.h"

namespace streamd {

// What distinguishes one log from another.
struct RecordLogFormat {
  char magic[4];
  uint8_t version;
  const char* file_name;
  const char* temp_file_name;
  uint32_t max_body_bytes;
  const char* what;  // how errors and the server's log name it: "group offsets log"
};

struct RecordLogOptions {
  // The log is rewritten while open only once it exceeds this and twice its live size.
  uint64_t rewrite_min_bytes = 1 << 20;
  // How far ahead of the records the file is zero-filled: an fdatasync that does not change the file's
  // size needs no journal commit, which makes the per-append sync several times cheaper.
  uint64_t preallocate_bytes = 256 << 10;
};

// The state a RecordLog keeps.
class RecordLogOwner {
 public:
  virtual ~RecordLogOwner() = default;
  // Applies one record found on open; false when its body does not parse (it then counts as damage).
  virtual bool replay(std::string_view body) = 0;
  // The live state as records (RecordLog::frame each body into `out`), for a rewrite.
  virtual void live_records(std::string& out) const = 0;
  // The bytes live_records() would write: the log is rewritten when it holds far more.
  virtual uint64_t live_bytes() const = 0;
};

class RecordLog {
 public:
  using Done = std::function<void(Status)>;
  static constexpr size_t kRecordHeaderSize = 8;  // u32 length, u32 CRC32C of the body

  // Opens (creating when missing) <dir>/<format.file_name>, replaying every whole record into `owner`,
  // which outlives the log.
  static Result<std::unique_ptr<RecordLog>> open(FileSystem& fs, std::string dir,
                                                 const RecordLogFormat& format, Executor& executor,
                                                 RecordLogOptions options, RecordLogOwner& owner);
  ~RecordLog();
  RecordLog(const RecordLog&) = delete;
  RecordLog& operator=(const RecordLog&) = delete;

  // Appends `body`, durably; `done` runs after the sync (or with the error that prevented it).
  void append(std::string body, Done done);
  // A record around `body`, appended to `out`.
  static void frame(std::string& out, std::string_view body);
  static size_t framed_size(size_t body_bytes) { return kRecordHeaderSize + body_bytes; }

  // Waits for queued appends to finish; later ones complete with UNAVAILABLE.
  void close();
  bool failed() const;
  // Bytes of the log's records (the file may be longer, zero-filled), for tests of the rewrite.
  uint64_t log_bytes() const { return end_.load(); }

 private:
  struct Pending {
    std::string body;
    Done done;
  };

  RecordLog(FileSystem& fs, std::string dir, const RecordLogFormat& format, Executor& executor,
            RecordLogOptions options, RecordLogOwner& owner);
  Status recover();
  Status rewrite();
  std::string file_header() const;
  Status damaged(std::string reason) const;
  // Writes and syncs one group of queued appends and answers each (GroupCommit's write).
  void flush(std::vector<Pending>& group);

  FileSystem& fs_;
  const std::string dir_;
  const RecordLogFormat format_;
  const std::string path_;
  const RecordLogOptions options_;
  RecordLogOwner& owner_;

  // Touched by open, rewrite and the flush in progress only (one at a time).
  std::unique_ptr<File> file_;
  std::atomic<uint64_t> end_{0};  // end of the records
  ZeroFillAhead zero_fill_;       // the file holds zeros from end_ up to its end()

  GroupCommit<Pending> commit_;
};

}  // namespace streamd
