// LogReader: walks the record batches of one segment's log forward from a position, reading the file
// in large chunks (one pread per chunk, not per batch). Recovery, index rebuilds, scans and compaction
// let every chunk overwrite the last; reads keep each chunk (ChunkBuffers::kKept), so that the records
// they return can view it, without a copy, for as long as the result lives.
// Not thread-safe; cheap to create.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "server/storage/file_system.h"
#include "server/storage/record_batch.h"
#include "server/storage/types.h"

namespace streamd {

// What a walk does with the bytes of the chunk it read before.
enum class ChunkBuffers {
  kReused,  // one buffer, overwritten by each read of the file
  kKept,    // a new buffer for each read, shared through LogReader::chunk()
};

struct LogBatch {
  BatchHeader header;
  // The whole batch. kReused: valid until the next call to next(); kKept: while chunk() is held.
  std::string_view bytes;
  FilePosition position;
};

class LogReader {
 public:
  // Reads batches in [start, limit) of `file`, chunk_bytes (or a whole batch, when larger) a read.
  LogReader(const File& file, FilePosition start, uint64_t limit, size_t chunk_bytes,
            ChunkBuffers buffers = ChunkBuffers::kReused);

  // The next whole, valid batch; false when the walk stops (see stop()).
  bool next(LogBatch& out);
  // Why the walk stopped: kOk at `limit`, kZeroFilled at preallocated space, kTruncated/kCorrupt at a
  // bad batch, whose position is stop_position() (kTruncated also when the file ends before `limit`).
  // An I/O error is io_status().
  BatchCheck stop() const { return stop_; }
  FilePosition stop_position() const { return FilePosition(pos_); }
  const std::string& reason() const { return reason_; }
  const Status& io_status() const { return io_; }
  // The size of the reads of the file from now on (a read that knows how much it still wants).
  void set_chunk_bytes(size_t chunk_bytes);
  // kKept: the buffer holding the last batch next() returned (null before the first read).
  const std::shared_ptr<const char[]>& chunk() const { return kept_; }

 private:
  bool refill(size_t at_least);

  const File& file_;
  uint64_t pos_;  // log position of the next batch
  const uint64_t limit_;
  size_t chunk_;
  const ChunkBuffers buffers_;
  // The log bytes at hand: [window_start_, window_start_ + window_len_) of the log.
  const char* window_ = nullptr;
  size_t window_len_ = 0;
  uint64_t window_start_ = 0;
  // kReused: the chunk buffer, reused by every refill that fits it.
  std::unique_ptr<char[]> buf_;
  size_t buf_capacity_ = 0;
  // kKept: the current chunk.
  std::shared_ptr<const char[]> kept_;
  BatchCheck stop_ = BatchCheck::kOk;
  std::string reason_;
  Status io_;
};

}  // namespace streamd
