// LogReader: walks the record batches of one segment's log file forward from a position, reading in
// large chunks (one pread per chunk, not per batch). Used by reads, recovery, index rebuilds and
// compaction. Not thread-safe; cheap to create.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/file_system.h"
#include "server/storage/record_batch.h"
#include "server/storage/types.h"

namespace streamd {

struct LogBatch {
  BatchHeader header;
  std::string_view bytes;  // the whole batch, valid until the next refill (see keep_current)
  FilePosition position;
};

class LogReader {
 public:
  // Reads batches in [start, limit). `kept`, when given, receives the chunk buffers marked by
  // keep_current(), so views into them outlive the reader.
  LogReader(const File& file, FilePosition start, uint64_t limit, size_t chunk_bytes,
            std::vector<std::unique_ptr<char[]>>* kept = nullptr);
  ~LogReader();

  // The next whole, valid batch; false when the walk stops (see stop()).
  bool next(LogBatch& out);
  // Why the walk stopped: kOk at `limit`, kZeroFilled at preallocated space, kTruncated/kCorrupt at a
  // bad batch, whose position is stop_position(). An I/O error is io_status().
  BatchCheck stop() const { return stop_; }
  FilePosition stop_position() const { return FilePosition(pos_); }
  const std::string& reason() const { return reason_; }
  const Status& io_status() const { return io_; }
  // Keeps the buffer holding the last returned batch alive in `kept`.
  void keep_current() { keep_ = true; }

 private:
  bool refill(size_t at_least);
  void release_buffer();

  const File& file_;
  uint64_t pos_;  // file position of the next batch
  const uint64_t limit_;
  const size_t chunk_;
  std::vector<std::unique_ptr<char[]>>* kept_;
  std::unique_ptr<char[]> buf_;
  size_t buf_len_ = 0;      // bytes of buf_ holding file data
  uint64_t buf_start_ = 0;  // file position of buf_[0]
  bool keep_ = false;
  BatchCheck stop_ = BatchCheck::kOk;
  std::string reason_;
  Status io_;
};

}  // namespace streamd
