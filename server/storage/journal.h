// Journal: one write-ahead file shared by every partition of a data directory, so that one fdatasync
// makes the small groups of many partitions durable together (docs/FORMAT.md §"Journal").
//
// Without it every partition syncs its own segment for each group, and appends spread over many
// partitions cost one sync each (docs/PERFORMANCE.md). With it a partition's flush writes a small group
// into its segment as usual, without syncing, and submits the group's sealed batches here; the journal's
// one writer thread takes every entry submitted meanwhile, from any partition, writes one record per
// entry in one gathered write, syncs the journal file once and answers each entry. Only then may the
// partition acknowledge and publish the group.
//
// The segments the records went to are synced later, together: when the journal file passes
// `file_bytes`, or `max_segments` segments wait for their sync (each keeps its file open), the writer
// starts the next file and a checkpoint syncs those segments and then removes the old file. A clean close
// does the same for everything and leaves no journal behind. After a crash, recovery reads the journal
// (read_journal) and each partition replays the records its segments lack (PartitionLog::replay).
//
// A stream's deletion writes a forget record first (forget()), durably: records of a stream written
// before it are never replayed into a later stream of the same name.
//
// Failures: a journal write the disk has no room for is cut away and fails only that group; any other
// failed write or sync fails the journal for good, and every later entry is answered with that
// failure at once. Either way a partition answered a failure syncs its own segment instead (the
// journal is a faster path to the same durability, never the only one).
//
// Thread-safety: submit() and forget() may be called from any thread; answers run on the writer thread.
#pragma once

#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/durable_write.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_commit.h"
#include "server/storage/status.h"

namespace streamd {

class Segment;

struct JournalOptions {
  // A checkpoint starts once the journal file holds this many bytes.
  uint64_t file_bytes = 64ull << 20;
  // ... or once this many segments wait for their sync (each holds its log file open meanwhile).
  size_t max_segments = 1024;
};

// What recovery finds in a journal directory.
struct JournalContents {
  // Per partition key (the partition's directory below the streams directory, "orders/3"), the sealed
  // batches of its records in writing order, records of streams forgotten later left out.
  std::map<std::string, std::vector<std::string>> batches;
  // The journal files read, oldest first: removed once every partition has what they hold.
  std::vector<std::string> files;
  // The sequence number the next journal file takes (one past the highest found).
  uint64_t next_sequence = 1;
};

// Reads every journal file in `dir` (a missing directory holds none). A file is read up to its first
// record that is not whole and valid: what follows it was never acknowledged.
Result<JournalContents> read_journal(FileSystem& fs, const std::string& dir);

class Journal {
 public:
  struct Entry {
    std::string key;                       // the partition's key (key_for)
    std::vector<std::string_view> batches;  // sealed batches, valid until `done` runs
    std::shared_ptr<Segment> segment;      // where they were written; synced by a checkpoint
    std::function<void(Status)> done;      // ok once the record is durable
    std::string forget;                    // instead of batches: the stream whose records end here
    std::string dir;                       // a directory whose changes the checkpoint must sync too
  };

  // Starts journal file `sequence` in `dir` (created when missing). `streams_dir` is what keys are
  // relative to.
  static Result<std::unique_ptr<Journal>> open(FileSystem& fs, std::string dir, std::string streams_dir,
                                               uint64_t sequence, JournalOptions options = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // The key of the partition in `partition_dir`, a directory below the streams directory.
  std::string key_for(const std::string& partition_dir) const;
  void submit(Entry entry);
  // The journal's one thread: partitions write their small groups there, so that each record write
  // takes every group written since the last (partition_log.h).
  Executor& executor() { return writer_; }
  // Writes the forget record of `stream` and waits until it is durable.
  Status forget(const std::string& stream);
  enum class CloseMode {
    kCheckpoint,  // sync every segment written through the journal and remove its files
    kAsIs,        // leave the files as a crash would (the next open replays them); tests use it
  };
  // Waits for the entries submitted so far, then closes as `mode` says; with kCheckpoint the next open
  // finds nothing to replay. Later entries are refused UNAVAILABLE.
  void close(CloseMode mode = CloseMode::kCheckpoint);
  // Waits until the checkpoints of the files retired so far have run (each succeeded or failed).
  void wait_for_checkpoints();

  static std::string file_name(uint64_t sequence);
  static constexpr std::string_view kMagic = "SDJRNL01";

 private:
  Journal(FileSystem& fs, std::string dir, std::string streams_dir, JournalOptions options);
  Status start_file(uint64_t sequence);
  void write(std::vector<Entry>& group);
  Status write_records(std::vector<Entry>& group);
  // Starts the next file and hands the full one to the checkpointer.
  void rotate();
  // On the checkpointer: syncs the segments of each retired file, oldest first, and removes the file;
  // stops at the first that fails (its successors may hold forget records its stale records need).
  void checkpoint();

  struct Retired {
    std::string path;
    std::vector<std::shared_ptr<Segment>> segments;
    std::vector<std::string> dirs;
  };
  // Moves what waits for the checkpoint of the current file into `retired`.
  void retire_dirty(Retired& retired);

  FileSystem& fs_;
  const std::string dir_;
  const std::string streams_dir_;
  const JournalOptions options_;

  // Writer state, touched by the one write in progress (or by close, once writes have stopped).
  std::unique_ptr<File> file_;
  std::string path_;
  uint64_t sequence_ = 0;
  uint64_t size_ = 0;
  ZeroFillAhead fill_;
  std::map<const Segment*, std::shared_ptr<Segment>> dirty_;
  std::set<std::string> dirty_dirs_;
  std::vector<std::string> headers_;
  std::vector<std::string_view> pieces_;

  std::mutex retired_mu_;
  std::deque<Retired> retired_;  // oldest first; what checkpoint() has yet to finish (a deque: the
                                 // checkpointer holds a reference to the front while more are added)
  bool rotate_failing_ = false;  // the last attempt to start the next file failed (logged once)

  // Declared last: destroyed (joined) first, while the state their tasks touch still exists.
  ThreadPool checkpointer_{1};
  ThreadPool writer_{1};
  GroupCommit<Entry> commit_;
};

}  // namespace streamd
