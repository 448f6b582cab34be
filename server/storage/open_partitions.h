// OpenPartitions: how many files the partitions of a store keep open at once (storage.max_open_files),
// as RocksDB's max_open_files bounds its table files. Each segment of an open partition holds its log
// and two index files open, and maps both indexes; a broker of 100,000 partitions cannot hold them all
// (the open-file limit, and vm.max_map_count's 65,530 mappings). So a partition opens when it is used
// (partition_slot.h), and when the open ones hold more files than the limit, a sweep closes idle ones
// until they fit: CLOCK order, so a partition used since the last sweep passed it is kept.
//
// A sweep closes partitions cleanly. One unchanged since its clean open closes without touching the
// disk; one written since seals its active segment and leaves the clean marker first (a few fsyncs),
// so the sweep runs on the storage executor, never on the network loop. The limit is checked when a
// partition opens, so the files held pass it only by what opens while a sweep is under way.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/storage/executor.h"

namespace streamd {

class PartitionSlot;

class OpenPartitions : public std::enable_shared_from_this<OpenPartitions> {
 public:
  // At most `max_files` open (0: no limit). Sweeps started by opened() run on `background`, which
  // must outlive this object; slots and posted sweeps share its ownership.
  static std::shared_ptr<OpenPartitions> make(uint64_t max_files, Executor& background);
  OpenPartitions(const OpenPartitions&) = delete;
  OpenPartitions& operator=(const OpenPartitions&) = delete;

  // Every slot of the store, for the sweeps to visit; forgotten once it is destroyed.
  void enlist(const std::shared_ptr<PartitionSlot>& slot);
  // A slot opened, now holding `files`: posts a sweep when the open slots hold more than the limit.
  void opened(uint64_t files);
  // A slot closed that held `files` when it opened (the sweep recounts the exact figure).
  void closed(uint64_t files);
  // Closes idle slots, least recently used first, until the open ones hold at most the limit, or none
  // is left that can close now. Returns the files then held.
  uint64_t sweep();
  // Whether the open slots hold more than the limit, by the last count.
  bool over_limit() const;

  uint64_t max_files() const { return max_files_; }
  uint64_t open_files() const { return open_files_.load(std::memory_order_relaxed); }

 private:
  OpenPartitions(uint64_t max_files, Executor& background);

  const uint64_t max_files_;
  Executor& background_;

  std::atomic<uint64_t> open_files_{0};
  std::atomic<bool> sweep_posted_{false};

  std::mutex mu_;  // the ring and the hand; held for a whole sweep
  std::vector<std::weak_ptr<PartitionSlot>> ring_;
  size_t hand_ = 0;
};

}  // namespace streamd
