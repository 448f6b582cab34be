// The long-poll hook behind Broker::watch: a watch names cursors on a stream's partitions and is woken
// once, as soon as any of them has a synced record at or after its cursor.
//
// Each partition has a PartitionWatchers, fed by the partition log's commit listener with every new synced
// end. A watch registers on each of its partitions first and checks their bounds second, so an append
// synced in between is seen by one or the other: no wake is missed. A cursor counts as ready when it
// differs from the partition's next offset — behind it there is a record to read (or an OFFSET_TRIMMED
// to report), past it an OFFSET_AHEAD; either way a read has something to say.
//
// Thread-safety: every method may be called from any thread; wake functions run without any lock held,
// on the thread that found the cursor ready (a storage thread, or the caller of add()).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "server/broker/broker.h"

namespace streamd {

class PartitionWatchers;

// One registered watch; fires at most once.
struct Watch {
  WatchId id = 0;
  std::function<void()> wake;
  std::atomic<bool> done{false};
  std::vector<std::weak_ptr<PartitionWatchers>> partitions;
};

class PartitionWatchers : public std::enable_shared_from_this<PartitionWatchers> {
 public:
  void add(const std::shared_ptr<Watch>& watch, Offset from);
  void remove(WatchId id);
  // The partition's synced end moved to `next`: wakes every watch whose cursor is below it.
  void committed(Offset next);
  // Wakes every watch (stream deleted, broker closing): the re-read reports why.
  void wake_all();

 private:
  struct Entry {
    Offset from;
    std::shared_ptr<Watch> watch;
  };
  std::mutex mu_;
  std::map<WatchId, Entry> entries_;
};

// Marks the watch done and wakes it, unless it already was (a race with another partition or unwatch).
// Its registrations on other partitions are removed.
void fire(const std::shared_ptr<Watch>& watch);

// Every live watch of the broker, for unwatch by id.
class WatchTable : public std::enable_shared_from_this<WatchTable> {
 public:
  // Registers on every (partitions[i], cursors[i]) and then checks `ready` (partition i's cursor is
  // ready now); fires at once when one is.
  WatchId add(const std::vector<std::shared_ptr<PartitionWatchers>>& partitions, const std::vector<Offset>& cursors,
              const std::function<bool(size_t)>& ready, std::function<void()> wake);
  // After unwatch returns the watch never wakes, unless its wake was already running.
  void remove(WatchId id);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  WatchId next_id_ = 1;
  std::map<WatchId, std::shared_ptr<Watch>> watches_;
};

}  // namespace streamd
