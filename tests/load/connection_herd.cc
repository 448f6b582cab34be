#include "tests/load/connection_herd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

std::string hello_frame() {
  v1::Request request;
  request.set_id(1);
  request.mutable_hello()->set_protocol_version(1);
  request.mutable_hello()->set_client_name("herd");
  return frame_of(request);
}

}  // namespace

ConnectionHerd::ConnectionHerd(uint16_t port, int count, std::chrono::milliseconds timeout) {
  run(port, count, timeout);
}

ConnectionHerd::~ConnectionHerd() { close_all(); }

void ConnectionHerd::close_all() {
  for (Peer& p : peers_) {
    if (p.fd >= 0) ::close(p.fd);
    p.fd = -1;
  }
}

void ConnectionHerd::fail(Peer& peer, const std::string& why) {
  if (outcome_.failed++ == 0) outcome_.first_failure = why;
  ::close(peer.fd);
  peer.fd = -1;
}

void ConnectionHerd::run(uint16_t port, int count, std::chrono::milliseconds timeout) {
  const std::string hello = hello_frame();
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  peers_.resize(static_cast<size_t>(count));
  int pending = 0;
  for (int i = 0; i < count; ++i) {
    Peer& p = peers_[static_cast<size_t>(i)];
    p.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p.fd < 0) {
      if (outcome_.failed++ == 0) outcome_.first_failure = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (::connect(p.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
      fail(p, std::string("connect: ") + std::strerror(errno));
      continue;
    }
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    ::epoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &ev);
    ++pending;
  }

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<epoll_event> events(1024);
  char buf[4096];
  while (pending > 0 && std::chrono::steady_clock::now() < deadline) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int e = 0; e < n; ++e) {
      Peer& p = peers_[events[static_cast<size_t>(e)].data.u32];
      if (p.fd < 0) continue;
      if (!p.sent && (events[static_cast<size_t>(e)].events & EPOLLOUT)) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || ::send(p.fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
          fail(p, std::string("connect or send: ") + std::strerror(err != 0 ? err : errno));
          --pending;
          continue;
        }
        p.sent = true;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = events[static_cast<size_t>(e)].data.u32;
        ::epoll_ctl(ep, EPOLL_CTL_MOD, p.fd, &ev);
      }
      if (!(events[static_cast<size_t>(e)].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      const ssize_t got = ::recv(p.fd, buf, sizeof buf, 0);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got > 0) p.received.append(buf, static_cast<size_t>(got));
      if (p.received.size() >= 4) {
        const auto* h = reinterpret_cast<const unsigned char*>(p.received.data());
        const size_t length = (size_t{h[0]} << 24) | (size_t{h[1]} << 16) | (size_t{h[2]} << 8) | h[3];
        if (p.received.size() >= 4 + length) {
          v1::Response response;
          response.ParseFromArray(p.received.data() + 4, static_cast<int>(length));
          ::epoll_ctl(ep, EPOLL_CTL_DEL, p.fd, nullptr);
          --pending;
          if (response.has_hello()) {
            ++outcome_.served;
          } else if (error_name(response) == "UNAVAILABLE") {
            ++outcome_.refused;
            ::close(p.fd);
            p.fd = -1;
          } else {
            fail(p, "unexpected answer: " + response.ShortDebugString());
          }
          continue;
        }
      }
      if (got <= 0) {
        ::epoll_ctl(ep, EPOLL_CTL_DEL, p.fd, nullptr);
        fail(p, got == 0 ? "closed without an answer" : std::string("recv: ") + std::strerror(errno));
        --pending;
      }
    }
  }
  if (pending > 0) {
    // Still waiting: counted as failed, left open until close_all.
    outcome_.failed += pending;
    if (outcome_.first_failure.empty()) outcome_.first_failure = std::to_string(pending) + " had no answer in time";
  }
  ::close(ep);
}

}  // namespace streamd::testing
