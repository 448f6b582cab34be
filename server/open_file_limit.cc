#include "server/open_file_limit.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>

namespace streamd {

OpenFileLimit raise_open_file_limit(uint32_t max_connections, uint64_t reserve) {
  OpenFileLimit out;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return out;
  out.before = out.now = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      out.now = raised.rlim_cur;
      spdlog::info("open file limit raised from {} to {}", out.before, out.now);
    }
  }
  if (out.now < uint64_t{max_connections} + reserve) {
    spdlog::warn("open file limit {} leaves fewer than {} descriptors beyond limits.max_connections ({}) for "
                 "segment files; raise LimitNOFILE (ulimit -n) or lower limits.max_connections",
                 out.now, reserve, max_connections);
  }
  return out;
}

uint64_t auto_max_open_files(uint64_t open_file_limit) {
  uint64_t max_map_count = 65530;  // the kernel's default, when /proc does not say
  std::ifstream("/proc/sys/vm/max_map_count") >> max_map_count;
  return std::max<uint64_t>(64, std::min(open_file_limit / 2, max_map_count / 4 * 3));
}

}  // namespace streamd
