#include "client/broker_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <utility>

#include "proto/framing.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 256 * 1024;

int millis_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1'000'000));
}

bool is_refusal(int error) { return error == ECONNREFUSED || error == ENETUNREACH || error == EHOSTUNREACH; }

// Why one address did not give a socket: `refused` when it definitely said no.
struct AttemptFailure {
  std::string reason;
  bool refused = false;
};

Status status_of(const v1::Response& response) {
  if (!response.has_error() || response.error().code() == 0) return Status();
  const v1::Error& e = response.error();
  Fields fields(e.fields().begin(), e.fields().end());
  std::string name = e.name();
  if (name.empty()) {
    const ErrorInfo* info = error_info(e.code());
    if (info != nullptr) name = std::string(info->name);
  }
  return Error(e.code(), std::move(name), e.message(), std::move(fields));
}

std::string serialize_frame(const v1::Request& request) {
  const size_t body = request.ByteSizeLong();
  std::string frame(kFrameHeaderBytes + body, '\0');
  write_frame_length(frame.data(), static_cast<uint32_t>(body));
  request.SerializeToArray(frame.data() + kFrameHeaderBytes, static_cast<int>(body));
  return frame;
}

// Step 1: a connected TCP socket to `address`, blocking for writes (a request is sent whole by its
// caller; the reactor's reads pass MSG_DONTWAIT), with Nagle off; -1 and `*why` when none.
int connect_to(const addrinfo& address, Clock::time_point deadline, AttemptFailure* why) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address.ai_protocol);
  auto fail = [fd, why](std::string reason, int error = 0) {
    if (fd >= 0) ::close(fd);
    *why = AttemptFailure{std::move(reason), is_refusal(error)};
    return -1;
  };
  if (fd < 0) return fail(std::strerror(errno));
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0 && errno != EINPROGRESS) {
    const int error = errno;
    return fail(std::strerror(error), error);
  }
  pollfd p{fd, POLLOUT, 0};
  const int ready = ::poll(&p, 1, millis_until(deadline));
  if (ready <= 0) return fail(ready == 0 ? "connect timed out" : std::strerror(errno));
  int so_error = 0;
  socklen_t len = sizeof so_error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) return fail(std::strerror(so_error), so_error);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Step 2: sends Hello on `fd` and waits for its answer into `*answer`; false and `*why` when there is
// none. The socket is not yet the reactor's, so its reads are waited for with poll.
bool exchange_hello(int fd, const HelloIdentity& identity, Clock::time_point deadline, v1::Response* answer,
                    std::string* why) {
  auto fail = [why](std::string reason) {
    *why = std::move(reason);
    return false;
  };
  v1::Request hello;
  hello.set_id(0);
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->set_client_name(identity.client_name);
  hello.mutable_hello()->set_token(identity.token);
  std::string frame = serialize_frame(hello);
  std::vector<iovec> iov{{frame.data(), frame.size()}};
  if (!write_all(fd, iov)) return fail(std::strerror(errno));
  FrameDecoder decoder(kMaxAnswerBytes);
  std::string_view body;
  while (true) {
    const FrameDecoder::State state = decoder.next(&body);
    if (state == FrameDecoder::State::kFrame) break;
    if (state == FrameDecoder::State::kTooLarge) return fail("no Hello answer");
    pollfd in{fd, POLLIN, 0};
    if (::poll(&in, 1, millis_until(deadline)) <= 0 || receive_into(fd, decoder, 0) <= 0) {
      return fail("no Hello answer");
    }
  }
  if (!answer->ParseFromArray(body.data(), static_cast<int>(body.size()))) return fail("unparsable Hello answer");
  return true;
}

}  // namespace

Result<DialedBroker> dial_broker(const BrokerAddress& broker, const HelloIdentity& identity,
                                 Clock::time_point deadline, bool* refused) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  const std::string port = std::to_string(broker.port);
  if (int rc = ::getaddrinfo(broker.host.c_str(), port.c_str(), &hints, &addresses); rc != 0) {
    *refused = rc != EAI_AGAIN;  // a temporary failure of name resolution is not an answer
    return broker_unavailable(broker, std::string("cannot resolve host: ") + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(addresses, &::freeaddrinfo);

  // Refused until an address answers otherwise: every address of the host said no.
  *refused = true;
  std::string last_error = "no address";
  for (const addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    AttemptFailure failure;
    const int fd = connect_to(*a, deadline, &failure);
    if (fd < 0) {
      last_error = std::move(failure.reason);
      *refused = *refused && failure.refused;
      continue;
    }
    // Any outcome past a connected socket means the broker may be there.
    *refused = false;
    v1::Response answer;
    if (!exchange_hello(fd, identity, deadline, &answer, &last_error)) {
      ::close(fd);
      continue;
    }
    if (Status status = status_of(answer); !status.ok()) {
      ::close(fd);
      return status.error();
    }
    return DialedBroker{fd, answer.hello().max_frame_bytes(), answer.hello().broker_version()};
  }
  return broker_unavailable(broker, last_error);
}

bool write_all(int fd, std::vector<iovec>& iov) {
  size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    // Past what went out: whole buffers, then part of the next.
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

ssize_t receive_into(int fd, FrameDecoder& decoder, int flags) {
  const ssize_t n = ::recv(fd, decoder.prepare(kReadChunk), kReadChunk, flags);
  if (n > 0) decoder.commit(static_cast<size_t>(n));
  return n;
}

}  // namespace streamd::client
