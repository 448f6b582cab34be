// PendingCreations: the appends to streams being auto-created, in call order, until each creation
// finishes. They must take offsets in the order they were sent (docs/SEMANTICS.md §5), and so must any
// append that arrives meanwhile: it queues behind them. The lock is held only while the queue of one
// stream is touched, and while finish() hands its appends on, so none can overtake them.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/broker/broker.h"

namespace streamd {

struct OwnedBatch;

class PendingCreations {
 public:
  struct Append {
    std::shared_ptr<const OwnedBatch> batch;
    std::function<void(Result<AppendResult>)> done;
    AppendOptions options;
  };

  // Whether any creation is in progress, without the lock: the common case skips join().
  bool any() const { return count_.load() > 0; }
  // Queues make() behind the creation of `stream` in progress; false, without calling make, when none is.
  bool join(const std::string& stream, const std::function<Append()>& make) {
    std::lock_guard lock(mu_);
    auto it = pending_.find(stream);
    if (it == pending_.end()) return false;
    it->second.push_back(make());
    return true;
  }
  // Queues `append` for `stream`; true when it is the first, whose caller must run the creation.
  bool begin(const std::string& stream, Append append) {
    std::lock_guard lock(mu_);
    auto [it, first] = pending_.try_emplace(stream);
    it->second.push_back(std::move(append));
    if (first) count_.fetch_add(1);
    return first;
  }
  // Ends the creation of `stream`: hands every queued append to `each`, in call order, under the lock.
  // The count drops only after: an append that saw it nonzero waits for the lock in join(), and one
  // that sees it zero comes after every handed append (the stream is in the catalogue by then). So a
  // `done` called from `each` must not append to the broker itself (every caller posts its answer).
  void finish(const std::string& stream, const std::function<void(Append&)>& each) {
    std::lock_guard lock(mu_);
    auto node = pending_.extract(stream);
    for (Append& append : node.mapped()) each(append);
    count_.fetch_sub(1);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<Append>> pending_;
  std::atomic<size_t> count_{0};
};

}  // namespace streamd
