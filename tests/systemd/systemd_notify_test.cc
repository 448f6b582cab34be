#include "server/systemd/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "tests/support/temp_dir.h"

namespace streamd::systemd {
namespace {

// Sets (or unsets, with nullopt) one environment variable for a test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_, value->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

// The supervisor's end: a bound datagram socket, at a path or (name starting with '@') abstract.
class Receiver {
 public:
  explicit Receiver(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(name.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name.front() == '@') addr.sun_path[0] = '\0';
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), length) == 0);
  }
  ~Receiver() { ::close(fd_); }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // The next datagram, or nullopt when none is queued (never blocks: a send completes before it
  // returns, so the datagram is already here or was never sent).
  std::optional<std::string> next() {
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) {
      REQUIRE((errno == EAGAIN || errno == EWOULDBLOCK));
      return std::nullopt;
    }
    return std::string(buffer, static_cast<size_t>(n));
  }

 private:
  int fd_ = -1;
};

TEST_CASE("every notification is one datagram to a path socket") {
  testing::TempDir dir;
  const std::string path = dir.file("notify.sock");
  Receiver receiver(path);
  ScopedEnv env("NOTIFY_SOCKET", path);

  REQUIRE(notify_ready().ok());
  CHECK(receiver.next() == "READY=1");
  REQUIRE(notify_watchdog().ok());
  CHECK(receiver.next() == "WATCHDOG=1");
  REQUIRE(notify_stopping().ok());
  CHECK(receiver.next() == "STOPPING=1");
  REQUIRE(notify("READY=1\nSTATUS=serving").ok());
  CHECK(receiver.next() == "READY=1\nSTATUS=serving");
  CHECK_FALSE(receiver.next().has_value());
}

TEST_CASE("a status line cannot smuggle in a second assignment") {
  testing::TempDir dir;
  const std::string path = dir.file("notify.sock");
  Receiver receiver(path);
  ScopedEnv env("NOTIFY_SOCKET", path);

  REQUIRE(notify_status("recovering\nREADY=1").ok());
  CHECK(receiver.next() == "STATUS=recovering READY=1");
}

TEST_CASE("an '@' socket name is an abstract socket") {
  std::random_device random;
  const std::string name =
      "@streamd-notify-test-" + std::to_string(::getpid()) + "-" + std::to_string(random());
  Receiver receiver(name);
  ScopedEnv env("NOTIFY_SOCKET", name);

  REQUIRE(notify_ready().ok());
  CHECK(receiver.next() == "READY=1");
}

TEST_CASE("without NOTIFY_SOCKET nothing is sent and nothing fails") {
  testing::TempDir dir;
  const std::string path = dir.file("notify.sock");
  Receiver receiver(path);
  for (const std::optional<std::string>& value :
       {std::optional<std::string>(), std::optional<std::string>("")}) {
    ScopedEnv env("NOTIFY_SOCKET", value);
    CHECK(notify_ready().ok());
    CHECK(notify_watchdog().ok());
    CHECK(notify_stopping().ok());
  }
  CHECK_FALSE(receiver.next().has_value());
}

TEST_CASE("a socket nobody listens on is a backend failure naming the path") {
  testing::TempDir dir;
  const std::string path = dir.file("missing.sock");
  ScopedEnv env("NOTIFY_SOCKET", path);

  const Status s = notify_ready();
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("op") == "sendto");
  CHECK(s.field("path") == path);
  CHECK(s.field("errno") == std::to_string(ENOENT));
}

TEST_CASE("a socket name that is neither a path nor abstract is refused") {
  for (const char* value : {"relative/notify.sock", "vsock:2:1234", "@", "/"}) {
    ScopedEnv env("NOTIFY_SOCKET", value);
    const Status s = notify_ready();
    CHECK(s.code() == Code::kStreamBackendFailed);
    CHECK(s.field("errno") == std::to_string(EINVAL));
  }
}

TEST_CASE("a socket path longer than sockaddr_un holds is refused") {
  ScopedEnv env("NOTIFY_SOCKET", "/" + std::string(sizeof(sockaddr_un::sun_path), 'x'));
  const Status s = notify_ready();
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("errno") == std::to_string(ENAMETOOLONG));
}

TEST_CASE("watchdog_interval reads WATCHDOG_USEC for this process only") {
  const std::string self = std::to_string(::getpid());
  SECTION("unset: no watchdog") {
    ScopedEnv usec("WATCHDOG_USEC", std::nullopt);
    ScopedEnv pid("WATCHDOG_PID", std::nullopt);
    CHECK_FALSE(watchdog_interval().has_value());
  }
  SECTION("set without a pid") {
    ScopedEnv usec("WATCHDOG_USEC", "30000000");
    ScopedEnv pid("WATCHDOG_PID", std::nullopt);
    CHECK(watchdog_interval() == std::chrono::seconds(30));
  }
  SECTION("set for this pid") {
    ScopedEnv usec("WATCHDOG_USEC", "1500");
    ScopedEnv pid("WATCHDOG_PID", self);
    CHECK(watchdog_interval() == std::chrono::microseconds(1500));
  }
  SECTION("set for another pid") {
    ScopedEnv usec("WATCHDOG_USEC", "30000000");
    ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid() + 1));
    CHECK_FALSE(watchdog_interval().has_value());
  }
  SECTION("values that do not parse, and zero, mean no watchdog") {
    ScopedEnv pid("WATCHDOG_PID", std::nullopt);
    for (const char* value : {"", "0", "-5", "30s", "12x", "99999999999999999999999"}) {
      ScopedEnv usec("WATCHDOG_USEC", value);
      CHECK_FALSE(watchdog_interval().has_value());
    }
  }
}

}  // namespace
}  // namespace streamd::systemd
