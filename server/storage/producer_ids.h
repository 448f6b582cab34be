// ProducerIds: hands out idempotent producers' ids that are never handed out twice by one data
// directory, across restarts and crashes included (docs/FORMAT.md §"Producer ids").
//
// Ids are taken from blocks: the file holds where the next block starts, and is replaced (durably)
// before any id of a new block is handed out. A crash loses what is left of the current block; no id
// is ever reused. One replacement per kBlock ids keeps allocation off the disk almost always.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "server/storage/file_system.h"
#include "server/storage/status.h"

namespace streamd {

class ProducerIds {
 public:
  static constexpr uint64_t kBlock = 1000;

  // Reads `path` in `dir` (a missing file: ids start at 0). STREAM_BACKEND_FAILED when it is damaged:
  // guessing could hand out ids again.
  static Result<std::unique_ptr<ProducerIds>> open(FileSystem& fs, std::string dir, std::string path);

  // The next id; may sync the file (a new block).
  Result<int64_t> next();

 private:
  ProducerIds(FileSystem& fs, std::string dir, std::string path, uint64_t start)
      : fs_(fs), dir_(std::move(dir)), path_(std::move(path)), next_(start), block_end_(start) {}

  FileSystem& fs_;
  const std::string dir_;
  const std::string path_;
  std::mutex mu_;
  uint64_t next_;
  uint64_t block_end_;  // the file says ids from here on are free
};

}  // namespace streamd
