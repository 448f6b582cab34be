// The socket half of a Connection (connection.h): dialling a broker and saying Hello, blocking writes
// of a frame laid out in pieces, and reads into a FrameDecoder. Plain POSIX calls on a descriptor the
// caller owns; no locking, no retries (the Connection decides those). With a TLS context the dial
// runs the handshake (tls_session.h) and says Hello through it; a failed handshake, and a plaintext
// client's Hello on a TLS port, are UNAVAILABLE marked definite: another attempt fails the same way.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "client/broker_address.h"
#include "client/error.h"
#include "client/frame_codec.h"
#include "client/tls_session.h"

namespace streamd::client {

// Answers are trusted more than requests: a Read answer may exceed the broker's request limit.
inline constexpr uint64_t kMaxAnswerBytes = 1ull << 30;

struct HelloIdentity {
  std::string client_name;
  std::string token;
};

// A connected socket that the broker has said Hello on.
struct DialedBroker {
  int fd = -1;  // blocking for writes, TCP_NODELAY, close-on-exec; the caller closes it
  std::unique_ptr<TlsSession> tls;  // the socket's TLS, with a TLS context; else null
  uint64_t max_frame_bytes = 0;
  std::string broker_version;
};

// Resolves `broker` and tries its addresses in turn until one connects and answers Hello, all before
// `deadline`. Failing, `*refused` says whether the failure was a definite refusal — every address
// refused or was unreachable, or the name does not exist — rather than silence or a broken Hello;
// a Hello the broker answers with an error returns that error (the broker is there: not refused).
// With `tls`, every connected address is TLS.
Result<DialedBroker> dial_broker(const BrokerAddress& broker, const HelloIdentity& identity,
                                 const std::shared_ptr<const TlsClientContext>& tls,
                                 std::chrono::steady_clock::time_point deadline, bool* refused);

// Blocking send of the buffers laid end to end; false with errno set on failure. Consumes `iov`.
bool write_all(int fd, std::vector<iovec>& iov);

// One recv() into `decoder` with `flags`; returns what recv returned (bytes are committed).
ssize_t receive_into(int fd, FrameDecoder& decoder, int flags);

// Through `tls`: one recv() of ciphertext into `scratch`, its plaintext appended to `decoder`. What
// recv returned; *opened says whether the session goes on (kMore), was closed or failed.
ssize_t receive_tls_into(int fd, TlsSession& tls, std::string& scratch, FrameDecoder& decoder, int flags,
                         TlsSession::Opened* opened);

// Seals `iov` through `tls` into `sealed` and writes it; empty, or why it failed.
std::string write_tls(int fd, TlsSession& tls, std::span<const iovec> iov, std::string& sealed);

}  // namespace streamd::client
