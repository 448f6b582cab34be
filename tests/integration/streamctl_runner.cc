#include "tests/integration/streamctl_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string loopback(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

std::vector<std::string> command_line(const std::string& broker, const std::vector<std::string>& args) {
  std::vector<std::string> argv{streamctl_binary(), "--broker", broker};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Starts the child with pipes for its three standard streams; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, int* in_fd, int* out_fd, int* err_fd) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  // A child that exits before reading all its input (a refused produce) makes the writes to it fail
  // EPIPE rather than kill the test. The child gets the default back: an ignored SIGPIPE would outlive
  // exec and change how streamctl ends on a closed pipe.
  ::signal(SIGPIPE, SIG_IGN);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> raw;
    for (const auto& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  *in_fd = in[1];
  *out_fd = out[0];
  *err_fd = err[0];
  return pid;
}

// VmHWM of a running process: its peak resident memory since its exec (rusage would also count the
// test process's memory the child shared before exec). 0 once it is gone.
long peak_rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// After a poll() of fds[0] (the child's stdout) and fds[1] (its stderr): appends what is ready to
// `out` and `err`, closing a descriptor at its end and setting it to -1.
void read_ready(const pollfd* fds, int& out_fd, int& err_fd, std::string& out, std::string& err) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    char buf[65536];
    ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
    if (n <= 0) {
      ::close(fds[i].fd);
      (i == 0 ? out_fd : err_fd) = -1;
    } else {
      (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
    }
  }
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string streamctl_binary() {
  if (const char* env = std::getenv("STREAMCTL_BINARY"); env != nullptr && *env != '\0') return env;
  return STREAMCTL_BINARY;
}

std::vector<std::string> CtlResult::lines() const {
  std::vector<std::string> result;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    result.push_back(out.substr(start, end - start));
    start = end + 1;
  }
  return result;
}

CtlResult run_streamctl(uint16_t port, const std::vector<std::string>& args, const std::string& input,
                        std::chrono::milliseconds timeout) {
  return run_streamctl(loopback(port), args, input, timeout);
}

CtlResult run_streamctl(const std::string& broker, const std::vector<std::string>& args, const std::string& input,
                        std::chrono::milliseconds timeout) {
  int in_fd, out_fd, err_fd;
  const pid_t pid = spawn(command_line(broker, args), &in_fd, &out_fd, &err_fd);
  ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  CtlResult result;
  size_t written = 0;
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  const auto deadline = Clock::now() + timeout;
  while ((out_fd >= 0 || err_fd >= 0) && Clock::now() < deadline) {
    // The high-water mark only grows after exec; the last reading is the latest (a reading taken
    // between fork and exec would count this process's memory).
    if (long peak = peak_rss_kb(pid); peak > 0) result.max_rss_kb = peak;
    pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
    if (::poll(fds, 3, 100) <= 0) continue;
    read_ready(fds, out_fd, err_fd, result.out, result.err);
    if (in_fd >= 0 && fds[2].revents != 0) {
      ssize_t n = ::write(in_fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == input.size()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) ::close(fd);
  }
  if (Clock::now() >= deadline) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.code = exit_code_of(status);
  return result;
}

StreamctlProcess::StreamctlProcess(uint16_t port, const std::vector<std::string>& args, bool open_stdin) {
  pid_ = spawn(command_line(loopback(port), args), &in_fd_, &out_fd_, &err_fd_);
  if (!open_stdin) close_input();
}

StreamctlProcess::~StreamctlProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  close_input();
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

void StreamctlProcess::pump(int timeout_ms) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, timeout_ms) <= 0) return;
  read_ready(fds, out_fd_, err_fd_, out_, err_);
}

std::vector<std::string> StreamctlProcess::wait_for_lines(size_t count, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  CtlResult view;
  while (Clock::now() < deadline) {
    view.out = out_.substr(0, out_.rfind('\n') == std::string::npos ? 0 : out_.rfind('\n') + 1);
    if (view.lines().size() >= count || out_fd_ < 0) break;
    pump(50);
  }
  view.out = out_.substr(0, out_.rfind('\n') == std::string::npos ? 0 : out_.rfind('\n') + 1);
  return view.lines();
}

void StreamctlProcess::signal(int signo) {
  if (pid_ > 0) ::kill(pid_, signo);
}

bool StreamctlProcess::write_input(std::string_view bytes) {
  while (!bytes.empty() && in_fd_ >= 0) {
    const ssize_t n = ::write(in_fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return bytes.empty();
}

void StreamctlProcess::close_input() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

CtlResult StreamctlProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while ((out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < deadline) pump(50);
  if (Clock::now() >= deadline) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  CtlResult result;
  result.code = exit_code_of(status);
  result.out = out_;
  result.err = err_;
  return result;
}

std::string json_string(const std::string& object, const std::string& name) {
  const std::string marker = "\"" + name + "\":\"";
  size_t at = object.find(marker);
  if (at == std::string::npos) return {};
  std::string value;
  for (size_t i = at + marker.size(); i < object.size() && object[i] != '"'; ++i) {
    if (object[i] == '\\' && i + 1 < object.size()) {
      const char e = object[++i];
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'u':  // the writer escapes only control characters this way
          value += static_cast<char>(std::stoi(object.substr(i + 1, 4), nullptr, 16));
          i += 4;
          break;
        default:
          value += e;
      }
    } else {
      value += object[i];
    }
  }
  return value;
}

int64_t json_int(const std::string& object, const std::string& name) {
  const std::string marker = "\"" + name + "\":";
  size_t at = object.find(marker);
  if (at == std::string::npos) return -1;
  return std::stoll(object.substr(at + marker.size()));
}

bool json_is_null(const std::string& object, const std::string& name) {
  return object.find("\"" + name + "\":null") != std::string::npos;
}

}  // namespace streamd::testing
