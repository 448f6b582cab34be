#include "bench/soak_tool/resource_sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/load/process_stats.h"

namespace streamd::soak {
namespace {

// How much a resource may rise from the warm window to the end before the soak fails: allocator and
// page-cache jitter, not a leak (a leak of even 10 bytes per append crosses it within the hour).
constexpr uint64_t kRssSlack = 8 << 20;
constexpr double kRssSlackFraction = 0.10;
constexpr uint64_t kFdSlack = 8;
// The shortest window a figure is taken over: long enough to hold a few of the workload's cycles.
constexpr double kWarmWindowS = 15;

uint64_t rss_anon(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

// A segment file's name: 20 digits and .log, .index or .timeindex (docs/FORMAT.md).
bool is_segment_file(const std::string& target) {
  const size_t slash = target.rfind('/');
  const std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
  const size_t dot = name.find('.');
  if (dot != 20 || name.find_first_not_of("0123456789") != 20) return false;
  const std::string ext = name.substr(dot);
  return ext == ".log" || ext == ".index" || ext == ".timeindex";
}

uint64_t segment_fds(pid_t pid) {
  std::error_code ec;
  uint64_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), link_ec);
    if (!link_ec && is_segment_file(target.string())) ++n;
  }
  return n;
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

template <class Get>
uint64_t median(const std::vector<ResourceSample>& s, size_t from, size_t to, Get get) {
  std::vector<uint64_t> v;
  for (size_t i = from; i < to; ++i) v.push_back(get(s[i]));
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

template <class Get>
uint64_t highest(const std::vector<ResourceSample>& s, size_t from, size_t to, Get get) {
  uint64_t m = 0;
  for (size_t i = from; i < to; ++i) m = std::max(m, get(s[i]));
  return m;
}

std::string window(double from_s, double to_s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f-%.0f s", from_s, to_s);
  return buf;
}

}  // namespace

ResourceSampler::ResourceSampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}

ResourceSampler::~ResourceSampler() { stop(); }

void ResourceSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ResourceSampler::run() {
  const auto start = std::chrono::steady_clock::now();
  for (int second = 0; !stop_; ++second) {
    ResourceSample s;
    s.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.rss = testing::resident_bytes(pid_).value_or(0);
    s.rss_anon = rss_anon(pid_);
    s.fds = testing::open_fds(pid_).value_or(0);
    s.segment_fds = segment_fds(pid_);
    {
      std::lock_guard lock(mu_);
      samples_.push_back(s);
    }
    const auto next = start + std::chrono::seconds(second + 1);
    while (!stop_ && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<ResourceSample> ResourceSampler::samples() const {
  std::lock_guard lock(mu_);
  return samples_;
}

Verdict ResourceSampler::verdict(double warm_up_s) const {
  const std::vector<ResourceSample> s = samples();
  Verdict v;
  const double ran_s = s.empty() ? 0 : s.back().at_s;
  const double warm_from_s = std::max(ran_s / 4, warm_up_s);
  const double warm_to_s = std::max(ran_s / 2, warm_up_s + kWarmWindowS);
  const double late_from_s = std::max(ran_s * 3 / 4, warm_to_s);
  if (ran_s - late_from_s < kWarmWindowS) {
    v.lines.push_back("too short to tell growth from warm-up: it needs " +
                      std::to_string(static_cast<int>(warm_up_s + 2 * kWarmWindowS)) + " s or more");
    v.decided = false;
    return v;
  }
  const auto at = [&](double t) {
    return static_cast<size_t>(std::lower_bound(s.begin(), s.end(), t,
                                                [](const ResourceSample& r, double x) { return r.at_s < x; }) -
                               s.begin());
  };
  const size_t n = s.size();
  const size_t warm_from = at(warm_from_s), warm_to = at(warm_to_s), late_from = at(late_from_s);
  const std::string warm_window = window(warm_from_s, warm_to_s);
  const std::string late_window = window(late_from_s, ran_s);
  auto memory = [&](const char* name, auto get) {
    const uint64_t warm = median(s, warm_from, warm_to, get);
    const uint64_t late = median(s, late_from, n, get);
    const uint64_t allowed = warm + std::max(kRssSlack, static_cast<uint64_t>(static_cast<double>(warm) * kRssSlackFraction));
    std::string line = std::string(name) + ": start " + mib(get(s.front())) + ", end " + mib(get(s.back())) +
                       ", max " + mib(highest(s, 0, n, get)) + "; median " + mib(warm) + " at " + warm_window + ", " + mib(late) +
                       " at " + late_window;
    if (late > allowed) {
      v.grew = true;
      line += "  GREW (allowed " + mib(allowed) + ")";
    }
    v.lines.push_back(line);
  };
  memory("rss     ", [](const ResourceSample& r) { return r.rss; });
  memory("rss anon", [](const ResourceSample& r) { return r.rss_anon; });
  auto fds = [](const ResourceSample& r) { return r.fds; };
  auto other_fds = [](const ResourceSample& r) { return r.fds - std::min(r.fds, r.segment_fds); };
  const uint64_t warm_max = highest(s, warm_from, warm_to, other_fds);
  const uint64_t late = median(s, late_from, n, other_fds);
  std::string line = "fds     : start " + std::to_string(s.front().fds) + ", end " + std::to_string(s.back().fds) +
                     ", max " + std::to_string(highest(s, 0, n, fds)) + " (live segment files at the end " +
                     std::to_string(s.back().segment_fds) + "); without those, highest " + std::to_string(warm_max) +
                     " at " + warm_window + ", median " + std::to_string(late) + " at " + late_window;
  if (late > warm_max + kFdSlack) {
    v.grew = true;
    line += "  GREW (allowed " + std::to_string(warm_max + kFdSlack) + ")";
  }
  v.lines.push_back(line);
  return v;
}

}  // namespace streamd::soak
