#include "tests/support/daemon_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/text_file.h"

extern char** environ;

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

bool read_ready_file(const std::string& path, DaemonPorts& ports) {
  const auto file = read_text_file(path);
  if (!file) return false;
  const std::string& text = *file;
  unsigned p = 0, h = 0, k = 0, t = 0, ht = 0, kt = 0;
  long pid = 0;
  if (std::sscanf(text.c_str(),
                  "{\"listen_port\":%u,\"http_port\":%u,\"kafka_port\":%u,\"tls_port\":%u,\"http_tls_port\":%u,"
                  "\"kafka_tls_port\":%u,\"pid\":%ld}",
                  &p, &h, &k, &t, &ht, &kt, &pid) != 7)
    return false;
  ports = DaemonPorts{static_cast<uint16_t>(p),  static_cast<uint16_t>(h),  static_cast<uint16_t>(k),
                      static_cast<uint16_t>(t),  static_cast<uint16_t>(ht), static_cast<uint16_t>(kt)};
  return true;
}

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

DaemonProcess::DaemonProcess(std::vector<std::string> args)
    : dir_(std::make_unique<TempDir>()), data_dir_(dir_->file("data")), args_(std::move(args)) {}

DaemonProcess::~DaemonProcess() {
  if (running()) kill9();
}

std::string DaemonProcess::binary() {
  if (const char* env = std::getenv("STREAMD_BINARY"); env != nullptr && *env != '\0') return env;
  return STREAMD_BINARY;
}

const std::string& DaemonProcess::dir() const {
  return dir_->path();
}

std::string DaemonProcess::log_path() const {
  return dir_->file("streamd.log");
}

std::string DaemonProcess::log() const {
  return read_text_file(log_path()).value_or("");
}

bool DaemonProcess::start(std::chrono::milliseconds timeout) {
  if (running()) return false;
  const std::string ready = dir_->file("ready.json");
  std::remove(ready.c_str());
  auto address = [&](uint16_t port) { return "127.0.0.1:" + std::to_string(keep_ports_ ? port : 0); };
  std::vector<std::string> argv_text{binary(),      "--data-dir",    data_dir_,     "--listen",
                                     address(ports_.listen), "--http-listen", address(ports_.http), "--ready-file",
                                     ready,         "--log-level",   "info"};
  argv_text.insert(argv_text.end(), args_.begin(), args_.end());
  // After the test's own flags, so that the Kafka listener too comes back where it was.
  if (keep_ports_ && ports_.kafka != 0) {
    argv_text.insert(argv_text.end(), {"--kafka.listen", address(ports_.kafka)});
  }
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  const std::string log_file = log_path();
  // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe
  // calls are allowed (the test process may have other threads).
  const pid_t parent = ::getpid();
  rlimit limited{};
  ::getrlimit(RLIMIT_FSIZE, &limited);
  if (file_size_limit_ > 0) limited.rlim_cur = file_size_limit_;
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The daemon dies with the test process, however that ends (a crash, a timeout's SIGKILL, SIGPIPE),
    // so no broker outlives the test that started it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(127);
    if (file_size_limit_ > 0) {
      // A write past the limit then fails with EFBIG instead of killing the daemon with SIGXFSZ.
      ::signal(SIGXFSZ, SIG_IGN);
      ::setrlimit(RLIMIT_FSIZE, &limited);
    }
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  const int rc = pid > 0 ? 0 : -1;
  if (rc != 0) return false;
  pid_ = pid;

  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (read_ready_file(ready, ports_)) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reap(status);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill9();
  return false;
}

void DaemonProcess::reap(int status) {
  pid_ = -1;
  if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_code_ = 128 + WTERMSIG(status);
  }
}

int DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (!running()) return -1;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reap(status);
      return *exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

int DaemonProcess::stop(std::chrono::milliseconds timeout) {
  if (!running()) return -1;
  ::kill(pid_, SIGTERM);
  const int code = wait_exit(timeout);
  if (code < 0) {
    kill9();
    return -1;
  }
  return code;
}

void DaemonProcess::kill9() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_) reap(status);
  pid_ = -1;
}

void DaemonProcess::signal(int signo) {
  if (running()) ::kill(pid_, signo);
}

HttpReply DaemonProcess::http_get(const std::string& path) const {
  HttpReply reply;
  TestSocket socket(ports_.http);
  if (!socket.connected()) return reply;
  if (!socket.send_all("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
    return reply;
  std::string response;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto byte = socket.read_exact(1, std::chrono::milliseconds(remaining_ms(deadline)));
    if (!byte) break;
    response += *byte;
  }
  const size_t head_end = response.find("\r\n\r\n");
  if (head_end == std::string::npos || std::sscanf(response.c_str(), "HTTP/1.1 %d", &reply.status) != 1) {
    return {};
  }
  reply.body = response.substr(head_end + 4);
  return reply;
}

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TestSocket::TestSocket(uint16_t port) : fd_(connect_loopback(port)) {}

TestSocket::~TestSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool TestSocket::send_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void TestSocket::shutdown_send() {
  ::shutdown(fd_, SHUT_WR);
}

std::optional<std::string> TestSocket::read_exact(size_t n, std::chrono::milliseconds timeout) {
  std::string out(n, '\0');
  size_t got = 0;
  const auto deadline = Clock::now() + timeout;
  while (got < n) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready <= 0) return std::nullopt;
    const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    got += static_cast<size_t>(r);
  }
  return out;
}

std::optional<std::string> TestSocket::read_frame(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto header = read_exact(4, timeout);
  if (!header) return std::nullopt;
  const auto* b = reinterpret_cast<const unsigned char*>(header->data());
  const size_t length = (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | size_t{b[3]};
  return read_exact(length, std::chrono::milliseconds(remaining_ms(deadline)));
}

bool TestSocket::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char buf[4096];
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready <= 0) return false;
    const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return true;
  }
}

}  // namespace streamd::testing
