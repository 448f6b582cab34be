#include "server/systemd/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

namespace streamd::systemd {
namespace {

constexpr const char* kNotifySocket = "NOTIFY_SOCKET";

// Fills `addr` from $NOTIFY_SOCKET's value; returns the address length, or an errno.
int socket_address(std::string_view name, sockaddr_un& addr, socklen_t& length) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  // A path or '@' plus an abstract name; anything else (a relative path, vsock:) is not ours.
  if (name.size() < 2 || (name.front() != '/' && name.front() != '@')) return EINVAL;
  // A path needs its terminating NUL inside sun_path; an abstract name does not.
  const size_t limit = name.front() == '/' ? sizeof addr.sun_path - 1 : sizeof addr.sun_path;
  if (name.size() > limit) return ENAMETOOLONG;
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name.front() == '@') addr.sun_path[0] = '\0';
  length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (name.front() == '/' ? 1 : 0));
  return 0;
}

std::optional<uint64_t> parse_u64(const char* text) {
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

}  // namespace

Status notify(std::string_view state) {
  const char* env = std::getenv(kNotifySocket);
  if (env == nullptr || *env == '\0') return Status();
  const std::string_view name(env);

  sockaddr_un addr;
  socklen_t length = 0;
  if (int err = socket_address(name, addr, length); err != 0) return Status::io_error("notify", name, err);

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io_error("socket", name, errno);
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), length);
  const int err = errno;
  ::close(fd);
  if (sent < 0) return Status::io_error("sendto", name, err);
  // A datagram goes whole or not at all; a short count would mean a truncated state.
  if (static_cast<size_t>(sent) != state.size()) return Status::io_error("sendto", name, EMSGSIZE);
  return Status();
}

Status notify_ready() {
  return notify("READY=1");
}
Status notify_stopping() {
  return notify("STOPPING=1");
}
Status notify_watchdog() {
  return notify("WATCHDOG=1");
}

Status notify_status(std::string_view text) {
  std::string state = "STATUS=";
  // The protocol is line-based: a newline in the text would start a new assignment.
  for (char ch : text) state += ch == '\n' ? ' ' : ch;
  return notify(state);
}

std::optional<std::chrono::microseconds> watchdog_interval() {
  const std::optional<uint64_t> usec = parse_u64(std::getenv("WATCHDOG_USEC"));
  if (!usec || *usec == 0 || *usec > static_cast<uint64_t>(std::chrono::microseconds::max().count())) {
    return std::nullopt;
  }
  // Set for a different process (inherited from a parent that was the watchdog's target): not ours.
  if (const char* pid_text = std::getenv("WATCHDOG_PID")) {
    const std::optional<uint64_t> pid = parse_u64(pid_text);
    if (!pid || *pid != static_cast<uint64_t>(::getpid())) return std::nullopt;
  }
  return std::chrono::microseconds(static_cast<int64_t>(*usec));
}

}  // namespace streamd::systemd
