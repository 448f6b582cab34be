#include "client/reactor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

namespace streamd::client {
namespace {

// epoll_event.data of the eventfd, written only to stop the thread; registrations' keys start at 1.
constexpr uint64_t kStopKey = 0;
constexpr int kMaxEvents = 64;

std::system_error system_error(const char* what) { return std::system_error(errno, std::generic_category(), what); }

}  // namespace

Reactor::Reactor() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw system_error("epoll_create1");
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    ::close(epoll_fd_);
    throw system_error("eventfd");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kStopKey;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &event);
  thread_ = std::thread([this] { run(); });
}

Reactor::~Reactor() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof one);
  thread_.join();
  ::close(stop_fd_);
  ::close(epoll_fd_);
}

uint64_t Reactor::add(int fd, Handler* handler) {
  std::lock_guard lock(mutex_);
  const uint64_t key = next_key_++;
  registrations_.emplace(key, Registration{fd, handler});
  epoll_event event{};
  // Level-triggered: a handler reads one chunk per call and is called again while more is waiting.
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = key;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    const int error = errno;
    registrations_.erase(key);
    errno = error;
    return 0;
  }
  return key;
}

void Reactor::remove(uint64_t key) {
  std::lock_guard lock(mutex_);
  auto it = registrations_.find(key);
  if (it == registrations_.end()) return;
  // Events of this socket already fetched by the thread are dropped by dispatch()'s lookup.
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  registrations_.erase(it);
}

void Reactor::wait_idle(const Handler* handler) {
  if (std::this_thread::get_id() == thread_.get_id()) return;
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return running_ != handler; });
}

template <typename Fn>
void Reactor::dispatch(uint64_t key, Fn fn) {
  Handler* handler;
  {
    std::lock_guard lock(mutex_);
    auto it = registrations_.find(key);
    if (it == registrations_.end()) return;
    handler = it->second.handler;
    running_ = handler;
  }
  fn(*handler);
  std::lock_guard lock(mutex_);
  running_ = nullptr;
  idle_.notify_all();
}

void Reactor::tick_all() {
  std::vector<uint64_t> keys;
  {
    std::lock_guard lock(mutex_);
    keys.reserve(registrations_.size());
    for (const auto& [key, registration] : registrations_) keys.push_back(key);
  }
  for (uint64_t key : keys) dispatch(key, [](Handler& h) { h.on_tick(); });
}

void Reactor::run() {
  epoll_event events[kMaxEvents];
  auto next_tick = std::chrono::steady_clock::now() + kTickPeriod;
  while (true) {
    // Rounded up: a wait truncated to 0 ms would spin through the last millisecond before each tick.
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_tick - std::chrono::steady_clock::now());
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
    if (std::any_of(events, events + std::max(n, 0), [](const epoll_event& e) { return e.data.u64 == kStopKey; })) {
      return;
    }
    for (int i = 0; i < n; ++i) dispatch(events[i].data.u64, [](Handler& h) { h.on_readable(); });
    if (std::chrono::steady_clock::now() >= next_tick) {
      tick_all();
      next_tick = std::chrono::steady_clock::now() + kTickPeriod;
    }
  }
}

}  // namespace streamd::client
