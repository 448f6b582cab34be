// ResourceSampler: the soak's record of the daemon's resources, sampled every second on a thread of
// its own: resident memory (VmRSS, and its anonymous part RssAnon, which heap growth shows in while
// VmRSS also counts mapped log pages that come and go with retention) and open descriptors. verdict()
// decides whether any of them grew: the median of the last quarter of the run against the window
// from a quarter to half-way through, after warm-up (first segments, caches, allocator arenas).
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
};

struct Verdict {
  bool grew = false;
  std::vector<std::string> lines;  // the figures, one per resource, and why it failed if it did
};

class ResourceSampler {
 public:
  explicit ResourceSampler(pid_t pid);
  ~ResourceSampler();
  std::vector<ResourceSample> samples() const;
  void stop();
  // Needs at least a minute of samples to tell growth from warm-up.
  Verdict verdict() const;

 private:
  void run();

  const pid_t pid_;
  mutable std::mutex mu_;
  std::vector<ResourceSample> samples_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace streamd::soak
