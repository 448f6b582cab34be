// ha_reaper DIR: the last line of defence of a test that starts services (tests/support/ha_cluster.h).
//
// The test starts it first, holding the only write end of a pipe that is the reaper's standard input.
// The reaper leaves the test's session (so a signal to the test's process group does not reach it),
// and waits for that pipe to end — which happens however the test ends: a clean exit, a failed
// REQUIRE, an abort, a crash or a SIGKILL from ctest's timeout. Then it SIGKILLs, by pid, every
// process whose working directory is DIR or lies under it (every PostgreSQL process runs in its data
// directory; etcd, Patroni and the brokers are started in directories of their own there) and every
// process DIR/pids lists ("PID STARTTIME" lines: a pid reused by another program since has another
// start time and is left alone), waits for them to go, and removes DIR.
//
// Only processes tied to DIR are ever signalled: nothing is chosen by name.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/proc_stat.h"

namespace {

// Whether `pid` is still the process that started at `started` (field 22 of /proc/PID/stat).
bool started_as(pid_t pid, const std::string& started) {
  const auto stat = streamd::testing::proc_stat(pid);
  return stat && stat->start_time == started;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

// Every process tied to `dir` now, this one excepted.
std::set<pid_t> tied_to(const std::string& dir) {
  std::set<pid_t> out;
  if (DIR* proc = ::opendir("/proc")) {
    while (dirent* e = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0 || pid == ::getpid()) continue;
      std::error_code ec;
      const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
      if (!ec && under(cwd.string(), dir)) out.insert(static_cast<pid_t>(pid));
    }
    ::closedir(proc);
  }
  std::ifstream listed(dir + "/pids");
  pid_t pid = 0;
  std::string started;
  while (listed >> pid >> started) {
    if (pid > 0 && pid != ::getpid() && started_as(pid, started)) out.insert(pid);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] != '/') {
    std::cerr << "usage: ha_reaper ABSOLUTE_DIR (its standard input held open by the test)\n";
    return 64;
  }
  const std::string dir = std::filesystem::weakly_canonical(argv[1]).string();
  if (dir == "/" || dir.size() < 5) return 64;  // never a sweep of the whole machine
  (void)::setsid();
  (void)::signal(SIGINT, SIG_IGN);
  (void)::signal(SIGTERM, SIG_IGN);
  (void)::signal(SIGHUP, SIG_IGN);
  if (::chdir("/") != 0) return 1;
  char buf[256];
  while (::read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const std::set<pid_t> left = tied_to(dir);
    if (left.empty() || std::chrono::steady_clock::now() > deadline) {
      if (!left.empty()) std::cerr << "ha_reaper: " << left.size() << " processes of " << dir << " did not die\n";
      break;
    }
    for (pid_t pid : left) (void)::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
