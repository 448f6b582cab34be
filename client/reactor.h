// Reactor: one thread that waits on many sockets at once (epoll) and tells each socket's handler when
// bytes have arrived, plus a tick every `kTickPeriod` for deadlines.
//
// Connections given the same Reactor (ConnectionOptions::reactor) receive their answers on its one
// thread. A process driving many connections — 64 closed-loop producers, say — then wakes one thread
// per burst of answers instead of a blocked thread per answer, and the broker's sends do not have to
// wake a thread on another CPU each time. A connection given none makes a Reactor of its own.
//
// Handlers run on the reactor thread, one at a time: what they do delays every socket of the reactor,
// so they must be short and must never wait for an answer.
//
// Thread-safety: add() and remove() may be called from any thread, including from a handler. Like
// std::thread, a Reactor that cannot get its kernel objects (epoll, eventfd) throws std::system_error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace streamd::client {

class Reactor {
 public:
  static constexpr std::chrono::milliseconds kTickPeriod{50};

  class Handler {
   public:
    // The socket is readable (or closed, or failed): read what is there without blocking.
    virtual void on_readable() = 0;
    // Called every kTickPeriod, whatever the socket does.
    virtual void on_tick() = 0;

   protected:
    ~Handler() = default;
  };

  Reactor();
  // Stops and joins the thread. Every handler must have been removed.
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Watches `fd` for input on behalf of `handler` until remove(). Returns the registration's key, or 0
  // with errno set when epoll refuses the descriptor.
  uint64_t add(int fd, Handler* handler);
  // No call to the registration's handler starts after this returns. Does not wait for one already
  // running: a handler may remove its own registration.
  void remove(uint64_t key);
  // Waits until no call to `handler` is running, unless called from the reactor thread (a handler
  // that is running is then the caller). After remove() of each of its registrations, a handler
  // may be destroyed once this returns.
  void wait_idle(const Handler* handler);

 private:
  struct Registration {
    int fd;
    Handler* handler;
  };

  void run();
  // Calls `fn` on the registration's handler if it is still registered.
  template <typename Fn>
  void dispatch(uint64_t key, Fn fn);
  void tick_all();

  int epoll_fd_ = -1;
  int stop_fd_ = -1;  // eventfd, written by the destructor to end the thread

  std::mutex mutex_;  // everything below
  std::condition_variable idle_;
  std::map<uint64_t, Registration> registrations_;
  uint64_t next_key_ = 1;
  const Handler* running_ = nullptr;
  std::thread thread_;
};

}  // namespace streamd::client
