// KafkaConnection: one Kafka client's connection, on the network loop (docs/KAFKA.md §Connections).
//
// It reads size-prefixed frames from its ByteStream, parses each request header against the API
// table and hands the request to its handler in arrival order. Every request takes a slot in a queue
// when it is read; an answer fills its slot, and answers leave only from the head of the queue, so
// responses leave in request order (Kafka clients match them by position) even when a later request
// is answered first. A Produce with acks=0 fills its slot with nothing.
//
// Bad input — a frame over limits.max_frame_bytes, an unknown API key, an unsupported version (other
// than ApiVersions', which is answered with UNSUPPORTED_VERSION) or a body that does not parse — is
// logged once; the connection stops reading, sends what it already owes, and closes.
//
// Flow control: request bytes not yet answered plus answer bytes not yet written; at
// limits.max_inflight_bytes the connection stops reading until answers drain. A connection idle for
// limits.idle_timeout with nothing owed, or whose answers have waited that long for a write to
// complete (a client that stopped reading), is closed; Kafka clients reconnect when they need to.
//
// Access (docs/KAFKA.md §Security): the connection is anonymous, or the subject of its verified TLS
// client certificate, until a SASL login (SaslHandshake, then SaslAuthenticate — or bare frames
// after a v0 handshake) names a principal of the access file; between the handshake and the end of
// the login nothing else is read. A failed login is answered SASL_AUTHENTICATION_FAILED, logged once
// with the peer, and closes the connection. Handlers check the principal's rights per topic. After
// a reload of the access file the principal is resolved again; one the file no longer knows closes.
//
// Threading: every member runs on the loop thread. Handlers' completions post back to the loop and
// hold a shared_ptr, so a connection lives until its last answer is dropped or written.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/auth/authenticator.h"
#include "server/config/config.h"
#include "server/kafka/answer.h"
#include "server/kafka/api_table.h"
#include "server/kafka/codec.h"
#include "server/kafka/errors.h"
#include "server/kafka/request_header.h"
#include "server/kafka/sasl_session.h"
#include "server/kafka/services.h"
#include "server/net/byte_stream.h"

namespace streamd::kafka {

// Something a connection waits on that must end when it closes (a long-poll fetch, a group join).
class Waiter {
 public:
  virtual ~Waiter() = default;
  virtual void finish_now() = 0;  // shutdown: answer now with what there is
  virtual void cancel() = 0;      // the connection closed: drop without answering
};

class KafkaConnection;

// The handle an answer goes through: the request's place in its connection's queue. Copyable; use
// it on the loop thread only.
class Responder {
 public:
  Responder(std::shared_ptr<KafkaConnection> conn, uint64_t seq, int32_t correlation_id, ApiKey api,
            bool flexible = false)
      : conn_(std::move(conn)), seq_(seq), correlation_id_(correlation_id), api_(api), flexible_(flexible) {}
  // A buffer for the answer, holding the response header (v1 with its tagged fields for a flexible
  // version, but ApiVersions' always v0); write the body after it, then send() it.
  std::string start() const { return start_response(correlation_id_, flexible_ && api_ != ApiKey::kApiVersions); }
  // Whether the request's version is flexible: its answer's body is encoded so (Writer's mode).
  bool flexible() const { return flexible_; }
  void send(Answer frame) const;
  void send_nothing() const;  // acks=0: the request takes no answer
  bool closed() const;
  void add_waiter(std::shared_ptr<Waiter> waiter) const;
  void remove_waiter() const;
  ApiKey api() const { return api_; }
  const std::shared_ptr<KafkaConnection>& connection() const { return conn_; }

 private:
  std::shared_ptr<KafkaConnection> conn_;
  uint64_t seq_;
  int32_t correlation_id_;
  ApiKey api_;
  bool flexible_;
};

// One request as a handler sees it. `principal` and `advertised` are the connection's: a handler
// that answers later copies what it needs of them.
class Request {
 public:
  Request(const RequestHeader& request_header, std::string_view request_body, Responder answer_to,
          Services& shared, const auth::Principal& who, const Advertised& address)
      : header(request_header),
        body(request_body),
        responder(std::move(answer_to)),
        services(shared),
        principal(who),
        advertised(address) {
    body.set_flexible(responder.flexible());
  }
  int16_t version() const { return header.api_version; }
  bool flexible() const { return responder.flexible(); }

  const RequestHeader& header;
  Reader body;  // in the version's encoding (flexible or not)
  Responder responder;
  Services& services;
  const auth::Principal& principal;
  const Advertised& advertised;
};

class KafkaConnection : public std::enable_shared_from_this<KafkaConnection> {
 public:
  struct Context {
    Services& services;
    const Limits& limits;
    const Advertised& advertised;  // this listener's address, for Metadata and FindCoordinator
    bool tls = false;              // the stream is TLS
    std::function<void(uint64_t connection_id)> on_closed;  // once, on the loop
  };

  KafkaConnection(std::unique_ptr<ByteStream> stream, uint64_t connection_id, Context context);
  ~KafkaConnection();
  KafkaConnection(const KafkaConnection&) = delete;
  KafkaConnection& operator=(const KafkaConnection&) = delete;

  void start();
  // Shutdown: read nothing more, answer waiting fetches now, close once everything is written.
  void drain();
  void close();

  // Fills request `seq`'s slot: a frame from start_response (finished here), or nothing.
  void answer(uint64_t seq, std::optional<Answer> frame);
  void add_waiter(uint64_t seq, std::shared_ptr<Waiter> waiter);
  void remove_waiter(uint64_t seq);

  bool closed() const { return closed_; }
  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }

  // SaslHandshake: starts a login with `mechanism` (one of the configured ones); `bare` for a v0
  // handshake, after which the client's SASL messages come as bare frames. ILLEGAL_SASL_STATE when a
  // login already began.
  Error begin_sasl(const std::string& mechanism, bool bare);
  // SaslAuthenticate: the next message of the login begun. A failure (ILLEGAL_SASL_STATE without a
  // handshake) is logged, and the connection closes once the answer is written.
  SaslSession::Step sasl_step(std::string_view message);

 private:
  struct Slot {
    bool ready = false;
    std::optional<Answer> frame;
    ApiKey api = ApiKey::kApiVersions;
    size_t request_bytes = 0;
    std::chrono::steady_clock::time_point received;
  };

  void read_more();
  void on_read(const std::error_code& ec, size_t n);
  // Parses and dispatches whole frames in the buffer; false when reading must stop.
  bool parse_frames();
  bool handle_frame(std::string_view frame);
  // A bare SASL message after a v0 handshake; false when the login failed.
  bool handle_bare_sasl(std::string_view message);
  // Resolves the principal again after a reload; false (the connection closes) when it is gone.
  bool recheck_principal();
  void violation(const std::string& what);
  void flush();
  void on_written(const std::error_code& ec);
  void maybe_finish();
  // Checks idleness after `delay` (Services::timers, on the loop): when the timeout would be reached.
  void arm_idle_check(std::chrono::milliseconds delay);
  void on_idle_check();

  std::unique_ptr<ByteStream> stream_;
  const uint64_t id_;
  Context context_;
  std::string peer_;

  enum class Login { kNone, kInProgress, kDone };
  Login login_ = Login::kNone;
  bool bare_sasl_ = false;
  std::unique_ptr<SaslSession> sasl_;
  auth::Proof proof_;
  auth::Principal principal_;
  uint64_t auth_generation_ = 0;
  bool read_any_ = false;  // a first read has completed (a TLS hello shows in the first bytes)

  std::string buf_;
  size_t begin_ = 0;  // first unparsed byte
  size_t end_ = 0;    // one past the last byte read

  std::deque<Slot> slots_;
  uint64_t head_seq_ = 0;  // the seq of slots_.front()
  std::deque<Answer> writing_;  // a deque: views of queued answers survive later pushes
  std::vector<std::string_view> write_views_;
  bool write_in_flight_ = false;

  uint64_t inflight_bytes_ = 0;
  bool read_in_flight_ = false;
  bool parsing_ = false;  // frames in the buffer are being handled: the buffer must not move
  bool reading_stopped_ = false;
  bool draining_ = false;
  bool closed_ = false;
  std::map<uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::chrono::steady_clock::time_point last_activity_;  // a read, or a write completing
  std::function<void()> cancel_idle_check_;
};

}  // namespace streamd::kafka
