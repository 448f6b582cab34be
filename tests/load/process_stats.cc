#include "tests/load/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>

#include <fstream>
#include <string>

namespace streamd::testing {

std::optional<uint64_t> resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmRSS:  1234 kB"
  }
  return std::nullopt;
}

std::optional<uint64_t> open_fds(pid_t pid) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return std::nullopt;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

uint64_t raise_fd_limit(uint64_t wanted) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur >= wanted) return limit.rlim_cur;
  rlimit raised = limit;
  raised.rlim_cur = wanted;
  if (raised.rlim_max < wanted) raised.rlim_max = wanted;  // needs CAP_SYS_RESOURCE
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    raised.rlim_max = limit.rlim_max;
    raised.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &raised);
  }
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

}  // namespace streamd::testing
