#include "tests/powercut/powercut_fs.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tests/powercut/powercut_protocol.h"

extern char** environ;

namespace streamd::powercut {
namespace {

std::string server_binary() {
  if (const char* env = std::getenv("STREAMD_POWERCUT_SERVER"); env != nullptr && *env != '\0') return env;
  return POWERCUT_SERVER_BINARY;
}

}  // namespace

std::string PowerCutFs::unavailable_reason() {
  if (::access("/dev/fuse", F_OK) != 0) return "/dev/fuse is missing (no FUSE in this kernel or container)";
  if (geteuid() == 0) {
    if (::access("/dev/fuse", R_OK | W_OK) != 0) return std::string("/dev/fuse is not usable: ") + std::strerror(errno);
    return "";
  }
  // Without root, libfuse mounts through the setuid fusermount3.
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t from = 0; from <= dirs.size();) {
    const size_t colon = std::min(dirs.find(':', from), dirs.size());
    if (::access((dirs.substr(from, colon - from) + "/fusermount3").c_str(), X_OK) == 0) return "";
    from = colon + 1;
  }
  return "fusermount3 is missing (package fuse3, which scripts/setup installs)";
}

std::unique_ptr<PowerCutFs> PowerCutFs::mount(const std::string& mount_point, std::string* error) {
  int to_server[2], from_server[2];
  if (::pipe2(to_server, O_CLOEXEC) != 0 || ::pipe2(from_server, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  std::string binary = server_binary();
  std::string point = mount_point;
  char* argv[] = {binary.data(), point.data(), nullptr};
  // Only async-signal-safe calls between fork and exec: this process may have other threads.
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::dup2(to_server[0], 0) < 0 || ::dup2(from_server[1], 1) < 0) ::_exit(127);
    ::execve(argv[0], argv, environ);
    ::_exit(127);
  }
  ::close(to_server[0]);
  ::close(from_server[1]);
  if (pid < 0) {
    ::close(to_server[1]);
    ::close(from_server[0]);
    *error = std::string("fork: ") + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<PowerCutFs> fs(
      new PowerCutFs(mount_point, pid, ::fdopen(to_server[1], "w"), ::fdopen(from_server[0], "r")));
  const std::string hello = fs->receive();
  if (hello != "ready") {
    *error = hello.empty() ? "powercut_server (" + binary + ") exited" : hello;
    return nullptr;
  }
  return fs;
}

PowerCutFs::PowerCutFs(std::string mount_point, pid_t pid, FILE* to, FILE* from)
    : mount_point_(std::move(mount_point)), pid_(pid), to_(to), from_(from) {}

PowerCutFs::~PowerCutFs() {
  std::fclose(to_);  // EOF: the server unmounts and exits
  int status = 0;
  ::waitpid(pid_, &status, 0);
  std::fclose(from_);
}

void PowerCutFs::send(const std::string& line) {
  std::fputs((line + "\n").c_str(), to_);
  std::fflush(to_);
}

std::string PowerCutFs::receive() {
  char* buf = nullptr;
  size_t cap = 0;
  const ssize_t n = ::getline(&buf, &cap, from_);
  std::string line = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  std::free(buf);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

CutReport PowerCutFs::cut(CutMode mode, uint64_t seed) {
  send(std::string("cut ") + (mode == CutMode::kTorn ? "torn " : "discard ") + std::to_string(seed));
  CutReport report;
  for (std::string line = receive(); !line.empty() && line != "end"; line = receive()) parse_report_line(line, report);
  return report;
}

void PowerCutFs::write_back() const {
  const int fd = ::open(mount_point_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // after a cut: nothing more reaches the disk anyway
  (void)::syncfs(fd);
  ::close(fd);
}

bool PowerCutFs::restore(std::string* error) {
  send("restore");
  const std::string answer = receive();
  if (answer == "ok") return true;
  *error = answer.empty() ? "powercut_server exited" : answer;
  return false;
}

void PowerCutFs::add_fault(const Fault& fault) {
  send(fault_command(fault));
  receive();
}

void PowerCutFs::clear_faults() {
  send("clear");
  receive();
}

uint64_t PowerCutFs::fsyncs() {
  send("stats");
  unsigned long long fsyncs = 0, faults = 0;
  std::sscanf(receive().c_str(), "stats %llu %llu", &fsyncs, &faults);
  return fsyncs;
}

uint64_t PowerCutFs::faults_injected() {
  send("stats");
  unsigned long long fsyncs = 0, faults = 0;
  std::sscanf(receive().c_str(), "stats %llu %llu", &fsyncs, &faults);
  return faults;
}

}  // namespace streamd::powercut
