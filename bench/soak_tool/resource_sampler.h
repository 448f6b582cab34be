// ResourceSampler: the soak's record of the daemon's resources, sampled every second on a thread of
// its own: resident memory (VmRSS, and its anonymous part RssAnon, which heap growth shows in while
// VmRSS also counts mapped log pages that come and go with retention) and open descriptors. verdict()
// decides whether any of them grew: the median of the last quarter of the run against the window
// from a quarter to half-way through, both after the workload's warm-up (its first segments reaching
// the number retention keeps, caches, allocator arenas): a run too short for both windows fails.
// Descriptors are judged without those open on live segment files: how many segments retention keeps
// moves with the machine's speed (a loaded machine writes fewer, larger ones), and a segment's
// descriptor that outlives its deletion still counts, as "(deleted)".
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace streamd::soak {

struct ResourceSample {
  double at_s = 0;
  uint64_t rss = 0;
  uint64_t rss_anon = 0;
  uint64_t fds = 0;
  uint64_t segment_fds = 0;  // open on a segment's log or index file that still exists
};

struct Verdict {
  bool decided = true;  // false when the run was too short to tell
  bool grew = false;
  std::vector<std::string> lines;  // the figures, one per resource, and why it failed if it did
};

class ResourceSampler {
 public:
  explicit ResourceSampler(pid_t pid);
  ~ResourceSampler();
  std::vector<ResourceSample> samples() const;
  void stop();
  // `warm_up_s`: how long the workload takes to reach the holdings it keeps (workers.h's kWarmUp).
  Verdict verdict(double warm_up_s) const;

 private:
  void run();

  const pid_t pid_;
  mutable std::mutex mu_;
  std::vector<ResourceSample> samples_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace streamd::soak
