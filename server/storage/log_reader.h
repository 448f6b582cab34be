// LogReader: walks the record batches of one segment's log forward from a position. It reads a file in
// large chunks (one pread per chunk, not per batch), for recovery, index rebuilds, scans and
// compaction; or it walks log bytes already in memory (a segment's read mapping), for reads.
// Not thread-safe; cheap to create.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "server/storage/file_system.h"
#include "server/storage/record_batch.h"
#include "server/storage/types.h"

namespace streamd {

struct LogBatch {
  BatchHeader header;
  // The whole batch. From a file, valid until the next call to next(); from memory, as long as it.
  std::string_view bytes;
  FilePosition position;
};

class LogReader {
 public:
  // Reads batches in [start, limit) of `file`.
  LogReader(const File& file, FilePosition start, uint64_t limit, size_t chunk_bytes);
  // Walks batches in [start, log.size()) of `log`, the first log.size() bytes of a segment's log.
  LogReader(std::string_view log, FilePosition start);

  // The next whole, valid batch; false when the walk stops (see stop()).
  bool next(LogBatch& out);
  // Why the walk stopped: kOk at `limit`, kZeroFilled at preallocated space, kTruncated/kCorrupt at a
  // bad batch, whose position is stop_position(). An I/O error is io_status().
  BatchCheck stop() const { return stop_; }
  FilePosition stop_position() const { return FilePosition(pos_); }
  const std::string& reason() const { return reason_; }
  const Status& io_status() const { return io_; }

 private:
  bool refill(size_t at_least);

  const File* file_;  // null when walking memory
  uint64_t pos_;      // log position of the next batch
  const uint64_t limit_;
  const size_t chunk_;
  // The log bytes at hand: [window_start_, window_start_ + window_len_) of the log.
  const char* window_ = nullptr;
  size_t window_len_ = 0;
  uint64_t window_start_ = 0;
  // From a file: the chunk buffer, reused by every refill that fits it.
  std::unique_ptr<char[]> buf_;
  size_t buf_capacity_ = 0;
  BatchCheck stop_ = BatchCheck::kOk;
  std::string reason_;
  Status io_;
};

}  // namespace streamd
