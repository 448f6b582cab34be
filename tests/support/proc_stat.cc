#include "tests/support/proc_stat.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace streamd::testing {

std::optional<ProcStat> proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string raw = whole.str();
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
  const size_t close = raw.rfind(')');
  if (close == std::string::npos || close + 2 > raw.size()) return std::nullopt;
  std::istringstream rest(raw.substr(close + 2));
  ProcStat out;
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 4) out.parent = static_cast<pid_t>(std::stol(field));
    if (i == 22) out.start_time = field;
  }
  if (out.start_time.empty()) return std::nullopt;
  return out;
}

bool signal_with_children(pid_t pid, int signo) {
  if (::kill(pid, signo) != 0) return false;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto child = static_cast<pid_t>(std::stol(name));
    const auto stat = proc_stat(child);
    if (stat && stat->parent == pid) (void)::kill(child, signo);
  }
  return true;
}

}  // namespace streamd::testing
