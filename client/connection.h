// Connection: one TCP connection to a broker speaking docs/PROTOCOL.md, shared by any number of threads.
// With ConnectionOptions::tls enabled, the connection is TLS (tls_session.h) to the broker's
// tls_listen; a failed handshake (a certificate that does not verify, a plaintext port) is UNAVAILABLE
// marked definite, since another attempt would fail the same way.
//
// It says Hello first, then pipelines requests: each gets a fresh correlation id, any number may be
// outstanding, and answers are matched by id in whatever order they arrive. Answers are received and
// completion callbacks run on a reactor thread (reactor.h) — the connection's own, or one shared with
// other connections through ConnectionOptions::reactor; callbacks must be short and must not call
// back into any connection of that reactor (they hand work to another thread instead) — except to
// send a request pinned to the socket they were answered on (`same_socket_as`), which never connects
// and so never waits for the reactor: a closed loop of one request after another then costs no
// thread hop.
//
// Every request has a deadline. A request that outlives it fails UNAVAILABLE (fields reason=timeout)
// and the socket is torn down with every other outstanding request: a broker that stopped answering
// one request cannot be trusted to answer later ones, and failing them together keeps requests to one
// partition from completing out of the order they were sent in (which the Producer relies on). A
// broken socket fails all outstanding requests UNAVAILABLE the same way. The next request reconnects,
// retrying with exponential backoff (also after a Hello answered UNAVAILABLE) until its deadline.
//
// Thread-safety: every public member may be called from any thread. Protobuf types are only declared
// here so that users of this header need not compile the generated code.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "client/backoff.h"
#include "client/broker_address.h"
#include "client/error.h"
#include "client/frame_codec.h"
#include "client/pending_requests.h"
#include "client/reactor.h"
#include "client/tls_session.h"

namespace streamd::v1 {
class Request;
class Response;
}  // namespace streamd::v1

namespace streamd::client {

struct DialedBroker;

struct ConnectionOptions {
  BrokerAddress broker{"127.0.0.1", 7411};
  std::string token;
  // TLS to the broker's tls_listen port (tls_session.h): off unless enabled.
  TlsOptions tls;
  std::string client_name = "streamd-client";
  // Deadline of a request that names none, counted from the call.
  std::chrono::milliseconds request_timeout{10'000};
  // Between failed connection attempts.
  Backoff reconnect_backoff;
  // Connections given the same reactor receive their answers on its one thread (reactor.h); with
  // none, a connection starts a reactor of its own when it first connects.
  std::shared_ptr<Reactor> reactor;
  // A refused connection attempt — nothing listens at the address, the host does not resolve or is
  // unreachable — is a definite answer. With fail_when_refused, the request that made the attempt
  // fails UNAVAILABLE at once, marked definite (Error::retriable() is false, so the retrying layers
  // return it too): a one-shot command reports it without waiting. Without it, attempts go on with
  // backoff until the request's deadline, which rides out a broker restart. An attempt that gets no
  // answer at all ends at the request's deadline either way.
  bool fail_when_refused = false;
  // An outage, told once however many attempts it takes: on_unreachable when an attempt fails and
  // the broker was reachable before (or at the first attempt), on_reachable when a connection next
  // succeeds. They run on the thread that was connecting, with no lock of the connection held.
  std::function<void(const Error& error)> on_unreachable;
  std::function<void()> on_reachable;
};

class Connection final : private Reactor::Handler {
 public:
  using Clock = std::chrono::steady_clock;
  // Runs exactly once per request: on the reactor thread, or on the calling thread when the request
  // fails before it is sent. `status` is the broker's error when the answer carries one.
  using Callback = PendingRequest::Callback;

  explicit Connection(ConnectionOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects and says Hello now rather than on the first request, retrying until `timeout` passes.
  Status connect(std::chrono::milliseconds timeout);

  // Sends `request` (its id is assigned here) and waits for the answer. A zero timeout means the
  // options' request_timeout.
  Status call(v1::Request& request, v1::Response* response, std::chrono::milliseconds timeout = {});
  // With `same_socket_as` non-zero, the request is only sent on the socket that generation names and
  // fails UNAVAILABLE at once if that socket is gone: a caller pipelining requests whose order
  // matters keeps them all on one socket, so that none can succeed after an earlier one was lost.
  // `*sent_on` receives the generation of the socket the request went out on (0 when it did not).
  void call_async(v1::Request& request, std::chrono::milliseconds timeout, Callback done,
                  uint64_t same_socket_as = 0, uint64_t* sent_on = nullptr);
  // The same for a request already encoded: `fields`, laid end to end, are the Request's wire-format
  // fields other than the id, which this call prepends (append_encoding.h builds them for appends).
  // They are written to the socket as they are, not copied into one frame first, so they must
  // outlive this call. `done` may run (on the reactor thread) before the call returns, but never
  // while the fields are still being written: from `done` on, they may be moved or freed.
  void call_async_encoded(std::span<const std::string_view> fields, std::chrono::milliseconds timeout, Callback done,
                          uint64_t same_socket_as = 0, uint64_t* sent_on = nullptr);
  // Runs exactly once per request, like Callback, with the bytes of the answer's body field (e.g. a
  // ReadResponse) left unparsed for the caller to decode (response_decoding.h); empty on error.
  using RawCallback = PendingRequest::RawCallback;
  void call_async_raw(v1::Request& request, std::chrono::milliseconds timeout, RawCallback done);

  // Fails every outstanding request and closes the socket, and a request waiting to reconnect (in
  // its backoff) fails at once; a later request reconnects.
  void close();
  // From now on a request that needs a new connection fails UNAVAILABLE at once, marked definite,
  // and one waiting to reconnect stops waiting; the live socket, if any, goes on serving. For a
  // client told to stop (a signal), which must not wait for a broker that is gone.
  void stop_reconnecting();

  const ConnectionOptions& options() const { return options_; }
  // From the last Hello; 0 before the first connection.
  uint64_t max_frame_bytes() const;
  std::string broker_version() const;

 private:
  void send(std::span<const std::string_view> fields, std::chrono::milliseconds timeout, PendingRequest pending,
            uint64_t same_socket_as, uint64_t* sent_on);
  // send() of a whole Request message, its id left to send().
  void send_request(v1::Request& request, std::chrono::milliseconds timeout, PendingRequest pending,
                    uint64_t same_socket_as, uint64_t* sent_on);

  // Connects when needed; waits out the backoff. Returns the generation of the live socket.
  Result<uint64_t> ensure_connected(Clock::time_point deadline);
  // Before a connection attempt: closes the last socket and renews the decoder.
  void forget_last_socket();
  // Waits until the next attempt is due; an error when the deadline ends first, or close() or
  // stop_reconnecting() cut the wait (`closes` is closes_ when the caller began).
  Status await_next_attempt(Clock::time_point deadline, uint64_t closes, const std::optional<Error>& last_error);
  // Makes `dialed` the live socket; its generation, or an error when the reactor refuses it.
  Result<uint64_t> adopt(DialedBroker& dialed);
  // Counts a failed attempt for the backoff; true when it began an outage.
  bool count_failure();
  // Reactor::Handler, on the reactor thread: receive and dispatch answers; expire deadlines.
  void on_readable() override;
  void on_tick() override;
  // Completes the request each whole frame in decoder_ answers.
  void dispatch_frames(uint64_t generation);
  // Shuts the socket of `generation` down and fails its outstanding requests with `error`, once no
  // write is in progress. Never called with write_mutex_ held.
  void teardown(uint64_t generation, const Error& error);
  void expire(uint64_t generation);
  // Returns once the write in progress, if any, has ended.
  void await_writes();

  const ConnectionOptions options_;

  std::mutex connect_mutex_;  // one (re)connection attempt at a time; taken before mutex_
  std::mutex write_mutex_;    // one frame written at a time; taken before mutex_
  mutable std::mutex mutex_;  // everything below
  int fd_ = -1;
  std::unique_ptr<TlsSession> tls_;  // the live socket's TLS, or null; replaced with fd_
  bool connected_ = false;
  uint64_t generation_ = 0;
  uint64_t max_frame_bytes_ = 0;
  std::string broker_version_;
  int failures_ = 0;  // consecutive failed connection attempts, for the backoff
  Clock::time_point next_attempt_{};
  bool unreachable_ = false;  // an outage was told (on_unreachable) and has not ended yet
  uint64_t closes_ = 0;       // close() calls: a reconnect's backoff ends when this moves
  bool reconnecting_stopped_ = false;
  std::condition_variable close_cv_;  // close() and stop_reconnecting() wake a reconnect's backoff
  PendingRequests pending_;
  std::shared_ptr<Reactor> reactor_;
  uint64_t registration_ = 0;  // the live socket's key in reactor_; 0 when none

  // The live socket's answers: read by the reactor thread, renewed between sockets while none is
  // registered.
  FrameDecoder decoder_;
  std::string received_;  // with TLS, the reactor's ciphertext buffer

  std::shared_ptr<const TlsClientContext> tls_context_;  // made on the first connection; connect_mutex_
  std::string sealed_;  // a frame's ciphertext; write_mutex_
};

}  // namespace streamd::client
