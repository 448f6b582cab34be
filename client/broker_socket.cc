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
#include <string_view>
#include <utility>

#include "client/broker_address.h"
#include "client/poll_timeout.h"
#include "proto/framing.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 256 * 1024;

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

// A TLS record's header (handshake or alert, version 3.x): what a TLS port sends a plaintext client.
// A Hello answer's first bytes are its length, which is never that large.
bool looks_like_tls_record(std::string_view bytes) {
  return bytes.size() >= 3 && (bytes[0] == 0x15 || bytes[0] == 0x16) && bytes[1] == 0x03 &&
         static_cast<unsigned char>(bytes[2]) <= 0x04;
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
  const int ready = ::poll(&p, 1, poll_timeout_until(deadline));
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

// Step 2: sends Hello on `fd` (through `tls` when it is not null) and waits for its answer into
// `*answer`. The socket is not yet the reactor's, so its reads are waited for with poll. An error
// when there is no answer: UNAVAILABLE, marked definite where another attempt would fail the same
// way (a TLS port answering a plaintext Hello, a client certificate refused after the handshake).
Status exchange_hello(const BrokerAddress& broker, int fd, TlsSession* tls, const HelloIdentity& identity,
                      Clock::time_point deadline, v1::Response* answer) {
  v1::Request hello;
  hello.set_id(0);
  hello.mutable_hello()->set_protocol_version(kProtocolVersion);
  hello.mutable_hello()->set_client_name(identity.client_name);
  hello.mutable_hello()->set_token(identity.token);
  std::string frame = serialize_frame(hello);
  std::vector<iovec> iov{{frame.data(), frame.size()}};
  if (tls != nullptr) {
    std::string sealed;
    if (std::string why = write_tls(fd, *tls, iov, sealed); !why.empty()) return broker_unavailable(broker, why);
  } else if (!write_all(fd, iov)) {
    return broker_unavailable(broker, std::strerror(errno));
  }
  FrameDecoder decoder(kMaxAnswerBytes);
  std::string_view body;
  std::string scratch;
  std::string first_bytes;  // of a plaintext answer: a TLS record there means a TLS port
  while (true) {
    const FrameDecoder::State state = decoder.next(&body);
    if (state == FrameDecoder::State::kFrame) break;
    if (state == FrameDecoder::State::kTooLarge) return broker_unavailable(broker, "unparsable Hello answer");
    pollfd in{fd, POLLIN, 0};
    if (::poll(&in, 1, poll_timeout_until(deadline)) <= 0) return broker_unavailable(broker, "no Hello answer");
    if (tls != nullptr) {
      TlsSession::Opened opened = TlsSession::Opened::kMore;
      const ssize_t n = receive_tls_into(fd, *tls, scratch, decoder, 0, &opened);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return broker_unavailable(broker, std::strerror(errno));
      // Under TLS 1.3 a refused client certificate is told only now, after the handshake.
      if (opened == TlsSession::Opened::kFailed) return broker_unavailable(broker, tls->reason()).definite();
      if (n == 0 || opened == TlsSession::Opened::kClosed)
        return broker_unavailable(broker, "the broker closed the connection before answering Hello");
      continue;
    }
    scratch.resize(kReadChunk);
    const ssize_t n = ::recv(fd, scratch.data(), scratch.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return broker_unavailable(broker, std::strerror(errno));
    if (n == 0 && first_bytes.empty()) {
      // A TLS port closes a plaintext client's connection without a word; a broker that answers in
      // plaintext answers Hello, even to refuse it.
      return broker_unavailable(broker,
                                "the broker closed the connection without answering Hello: is this a TLS port (--tls)?")
          .definite();
    }
    if (n == 0) return broker_unavailable(broker, "the broker closed the connection before answering Hello");
    if (first_bytes.size() < 3) {
      first_bytes.append(scratch.data(), std::min<size_t>(static_cast<size_t>(n), 3 - first_bytes.size()));
      if (looks_like_tls_record(first_bytes))
        return broker_unavailable(broker, "the broker answered in TLS: this is a TLS port (--tls)").definite();
    }
    decoder.feed({scratch.data(), static_cast<size_t>(n)});
  }
  if (!answer->ParseFromArray(body.data(), static_cast<int>(body.size())))
    return broker_unavailable(broker, "unparsable Hello answer");
  return Status();
}

}  // namespace

Result<DialedBroker> dial_broker(const BrokerAddress& broker, const HelloIdentity& identity,
                                 const std::shared_ptr<const TlsClientContext>& tls, Clock::time_point deadline,
                                 bool* refused) {
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
    std::unique_ptr<TlsSession> session;
    if (tls) {
      auto handshake = TlsSession::handshake(tls, fd, broker.host, deadline);
      if (!handshake.ok()) {
        ::close(fd);
        Error error = handshake.error();
        return error.with("broker", address_text(broker));
      }
      session = std::move(*handshake);
    }
    v1::Response answer;
    Status hello = exchange_hello(broker, fd, session.get(), identity, deadline, &answer);
    if (hello.ok()) hello = status_of(answer);
    if (!hello.ok()) {
      session.reset();
      ::close(fd);
      // A broker that answered (even to refuse) or a definite failure ends the dial; silence tries the
      // next address.
      if (!hello.error().retriable()) return hello.error();
      last_error = hello.error().field("reason");
      continue;
    }
    return DialedBroker{fd, std::move(session), answer.hello().max_frame_bytes(), answer.hello().broker_version()};
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

ssize_t receive_tls_into(int fd, TlsSession& tls, std::string& scratch, FrameDecoder& decoder, int flags,
                         TlsSession::Opened* opened) {
  scratch.resize(kReadChunk);
  const ssize_t n = ::recv(fd, scratch.data(), scratch.size(), flags);
  *opened = n > 0 ? tls.open(scratch.data(), static_cast<size_t>(n), decoder) : TlsSession::Opened::kMore;
  return n;
}

std::string write_tls(int fd, TlsSession& tls, std::span<const iovec> iov, std::string& sealed) {
  if (!tls.seal(iov, &sealed)) return tls.reason();
  std::vector<iovec> out{{sealed.data(), sealed.size()}};
  if (!write_all(fd, out)) return std::strerror(errno);
  return {};
}

}  // namespace streamd::client
