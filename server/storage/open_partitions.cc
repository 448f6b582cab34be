#include "server/storage/open_partitions.h"

#include <algorithm>

#include "server/storage/partition_slot.h"

namespace streamd {

OpenPartitions::OpenPartitions(uint64_t max_files, Executor& background)
    : max_files_(max_files), background_(background) {}

std::shared_ptr<OpenPartitions> OpenPartitions::make(uint64_t max_files, Executor& background) {
  return std::shared_ptr<OpenPartitions>(new OpenPartitions(max_files, background));
}

void OpenPartitions::enlist(const std::shared_ptr<PartitionSlot>& slot) {
  std::lock_guard lock(mu_);
  ring_.push_back(slot);
}

bool OpenPartitions::over_limit() const { return max_files_ > 0 && open_files() > max_files_; }

void OpenPartitions::opened(uint64_t files) {
  open_files_.fetch_add(files, std::memory_order_relaxed);
  if (!over_limit() || sweep_posted_.exchange(true)) return;
  background_.post([self = shared_from_this()] {
    self->sweep();
    self->sweep_posted_.store(false);
  });
}

void OpenPartitions::closed(uint64_t files) {
  uint64_t held = open_files_.load(std::memory_order_relaxed);
  while (!open_files_.compare_exchange_weak(held, held - std::min(held, files), std::memory_order_relaxed)) {
  }
}

uint64_t OpenPartitions::sweep() {
  std::lock_guard lock(mu_);
  // Recounted: rolls and retention change what an open partition holds without telling the cache.
  uint64_t held = 0;
  for (size_t i = 0; i < ring_.size();) {
    auto slot = ring_[i].lock();
    if (!slot) {
      ring_[i] = std::move(ring_.back());
      ring_.pop_back();
      continue;
    }
    held += slot->files();
    ++i;
  }
  open_files_.store(held, std::memory_order_relaxed);
  if (max_files_ == 0 || held <= max_files_) return held;
  // Down to 7/8 of the limit, so a working set just above it does not sweep at every open.
  const uint64_t target = max_files_ - max_files_ / 8;
  // Two turns of the hand: the first clears the bits of partitions used since the last sweep.
  for (size_t visited = 0; held > target && visited < 2 * ring_.size(); ++visited) {
    if (hand_ >= ring_.size()) hand_ = 0;
    auto slot = ring_[hand_++].lock();
    if (!slot || !slot->is_open() || slot->take_used()) continue;
    held -= std::min(held, slot->close_if_idle());
  }
  open_files_.store(held, std::memory_order_relaxed);
  return held;
}

}  // namespace streamd
