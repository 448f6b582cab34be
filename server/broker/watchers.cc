#include "server/broker/watchers.h"

namespace streamd {

void fire(const std::shared_ptr<Watch>& watch) {
  if (watch->done.exchange(true)) return;
  for (const auto& weak : watch->partitions) {
    if (auto p = weak.lock()) p->remove(watch->id);
  }
  watch->wake();
}

void PartitionWatchers::add(const std::shared_ptr<Watch>& watch, Offset from) {
  std::lock_guard lock(mu_);
  entries_[watch->id] = Entry{from, watch};
}

void PartitionWatchers::remove(WatchId id) {
  std::lock_guard lock(mu_);
  entries_.erase(id);
}

void PartitionWatchers::committed(Offset next) {
  std::vector<std::shared_ptr<Watch>> ready;
  {
    std::lock_guard lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.from < next) {
        ready.push_back(std::move(it->second.watch));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& w : ready) fire(w);
}

void PartitionWatchers::wake_all() {
  std::map<WatchId, Entry> all;
  {
    std::lock_guard lock(mu_);
    all.swap(entries_);
  }
  for (auto& [id, entry] : all) fire(entry.watch);
}

WatchId WatchTable::add(const std::vector<std::shared_ptr<PartitionWatchers>>& partitions,
                        const std::vector<Offset>& cursors, const std::function<bool(size_t)>& ready,
                        std::function<void()> wake) {
  auto watch = std::make_shared<Watch>();
  // A fired watch leaves the table too, so watches nobody unwatches do not pile up.
  std::weak_ptr<WatchTable> table = weak_from_this();
  watch->wake = [table, watch_ptr = watch.get(), wake = std::move(wake)] {
    if (auto t = table.lock()) {
      std::lock_guard lock(t->mu_);
      t->watches_.erase(watch_ptr->id);
    }
    wake();
  };
  {
    std::lock_guard lock(mu_);
    watch->id = next_id_++;
    watches_.emplace(watch->id, watch);
  }
  for (const auto& p : partitions) watch->partitions.push_back(p);
  for (size_t i = 0; i < partitions.size(); ++i) partitions[i]->add(watch, cursors[i]);
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (ready(i)) {
      fire(watch);
      break;
    }
  }
  return watch->id;
}

void WatchTable::remove(WatchId id) {
  std::shared_ptr<Watch> watch;
  {
    std::lock_guard lock(mu_);
    auto it = watches_.find(id);
    if (it == watches_.end()) return;
    watch = std::move(it->second);
    watches_.erase(it);
  }
  watch->done.store(true);
  for (const auto& weak : watch->partitions) {
    if (auto p = weak.lock()) p->remove(id);
  }
}

size_t WatchTable::size() const {
  std::lock_guard lock(mu_);
  return watches_.size();
}

}  // namespace streamd
