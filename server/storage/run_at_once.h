// run_at_once: independent tasks that mostly wait for the disk, run several at a time.
//
// Closing or recovering many partitions is mostly syncs, each a journal commit on a journaling
// filesystem. Made one after another, every sync waits for a commit of its own; made from several
// threads at once, they share commits and keep more than one request in flight on the device. The
// threads spend their time waiting, so there may be more of them than cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace streamd {

// Runs task(0) ... task(count - 1), at most `threads` at once (the caller's thread among them), each
// exactly once, in no particular order; returns when all have returned.
inline void run_at_once(size_t count, size_t threads, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  auto run_next = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) task(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < std::min(threads, count); ++t) helpers.emplace_back(run_next);
  run_next();
  for (std::thread& t : helpers) t.join();
}

}  // namespace streamd
