#include "client/reactor.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <thread>

namespace streamd::client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Both ends of a connected socket pair, closed at the end of the test.
struct SocketPair {
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
  ~SocketPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  int fds[2];
};

// Reads what is there (so that level-triggered readiness ends) and counts the calls.
class CountingHandler final : public Reactor::Handler {
 public:
  explicit CountingHandler(int fd) : fd_(fd) {}
  void on_readable() override {
    char buf[64];
    if (::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) ++reads;
    if (during_read) during_read();
  }
  void on_tick() override { ++ticks; }

  std::atomic<int> reads{0};
  std::atomic<int> ticks{0};
  std::function<void()> during_read;

 private:
  int fd_;
};

// Polls `done` for up to two seconds.
bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + milliseconds(2000);
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return done();
}

TEST_CASE("each socket's handler hears of its own input, on the one reactor thread", "[reactor]") {
  Reactor reactor;
  SocketPair a, b;
  CountingHandler on_a(a.fds[0]), on_b(b.fds[0]);
  std::atomic<std::thread::id> a_thread{}, b_thread{};
  on_a.during_read = [&] { a_thread = std::this_thread::get_id(); };
  on_b.during_read = [&] { b_thread = std::this_thread::get_id(); };
  const uint64_t key_a = reactor.add(a.fds[0], &on_a);
  const uint64_t key_b = reactor.add(b.fds[0], &on_b);
  REQUIRE(key_a != 0);
  REQUIRE(key_b != key_a);

  REQUIRE(::send(a.fds[1], "x", 1, 0) == 1);
  CHECK(eventually([&] { return on_a.reads == 1; }));
  CHECK(on_b.reads == 0);
  REQUIRE(::send(b.fds[1], "y", 1, 0) == 1);
  CHECK(eventually([&] { return on_b.reads == 1; }));
  CHECK(a_thread.load() == b_thread.load());
  CHECK(a_thread.load() != std::this_thread::get_id());
  reactor.remove(key_a);
  reactor.remove(key_b);
}

TEST_CASE("every registration ticks about every period, with or without input", "[reactor]") {
  Reactor reactor;
  SocketPair pair;
  CountingHandler handler(pair.fds[0]);
  const uint64_t key = reactor.add(pair.fds[0], &handler);
  CHECK(eventually([&] { return handler.ticks >= 3; }));
  reactor.remove(key);
}

TEST_CASE("after remove() a handler is never called, even with input waiting", "[reactor]") {
  Reactor reactor;
  SocketPair pair;
  CountingHandler handler(pair.fds[0]);
  const uint64_t key = reactor.add(pair.fds[0], &handler);
  reactor.remove(key);
  reactor.wait_idle(&handler);
  const int ticks = handler.ticks;
  REQUIRE(::send(pair.fds[1], "x", 1, 0) == 1);
  std::this_thread::sleep_for(Reactor::kTickPeriod * 3);
  CHECK(handler.reads == 0);
  CHECK(handler.ticks == ticks);
  reactor.remove(key);  // twice is harmless
}

TEST_CASE("a handler may remove itself, wait_idle waits for a call that is running", "[reactor]") {
  Reactor reactor;
  SocketPair pair;
  CountingHandler handler(pair.fds[0]);
  uint64_t key = 0;
  std::atomic<bool> entered{false}, release{false}, finished{false};
  handler.during_read = [&] {
    reactor.remove(key);
    reactor.wait_idle(&handler);  // on the reactor thread: returns at once
    entered = true;
    while (!release) std::this_thread::sleep_for(milliseconds(1));
    finished = true;
  };
  key = reactor.add(pair.fds[0], &handler);
  REQUIRE(::send(pair.fds[1], "x", 1, 0) == 1);
  REQUIRE(eventually([&] { return entered.load(); }));
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(50));
    release = true;
  });
  reactor.wait_idle(&handler);
  CHECK(finished);
  releaser.join();
  REQUIRE(::send(pair.fds[1], "y", 1, 0) == 1);
  std::this_thread::sleep_for(Reactor::kTickPeriod * 2);
  CHECK(handler.reads == 1);
}

TEST_CASE("a descriptor epoll cannot watch is refused with errno set", "[reactor]") {
  Reactor reactor;
  SocketPair pair;
  CountingHandler handler(pair.fds[0]);
  errno = 0;
  CHECK(reactor.add(-1, &handler) == 0);
  CHECK(errno == EBADF);
}

}  // namespace
}  // namespace streamd::client
