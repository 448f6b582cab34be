// Connection: one client's connection, plain TCP or TLS behind a ByteStream, owned by the network
// loop (docs/PROTOCOL.md).
//
// It owns its stream, its FrameReader and its write queue. Three coroutines run per connection: the
// reader splits frames and hands each parsed Request to the RequestHandler in arrival order; the
// writer sends queued answers, one write in flight at a time (gathering what queued behind it) — an
// answer that finds nothing queued is written at once by whoever produced it (over plain TCP), and
// only what the socket does not take is queued; the
// watchdog closes a connection idle for limits.idle_timeout with nothing in flight, or whose answers
// have waited that long without a write completing (a client that stopped reading), and one whose
// frame has not arrived whole limits.frame_timeout after its first byte (a client dribbling bytes to
// hold its place: slow-loris). Answers may come back in any order; each carries its request's id.
//
// Flow control: `inflight_bytes` counts request frames read but not yet answered plus answer frames
// not yet written; at limits.max_inflight_bytes the reader stops reading the socket until answers
// drain (one frame is always admitted when nothing is in flight, so a frame over the budget still
// passes). Protocol violations answer PROTOCOL_ERROR or FRAME_TOO_LARGE and close after that answer
// is written.
//
// Access (docs/SECURITY.md): Hello's token, or else the TLS client certificate's subject, names the
// connection's principal; each request is held to the principal's rights on the stream it names
// (PERMISSION_DENIED with fields operation, stream, right and principal), and after a reload of the
// access file the connection is resolved again at its next request.
//
// Threading: every member runs on the loop thread. Completions from storage threads reach it by
// asio::post; they hold a shared_ptr, so a Connection lives until its last answer is dropped or sent.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "server/auth/authenticator.h"
#include "server/config/config.h"
#include "server/net/byte_stream.h"
#include "server/net/frame.h"
#include "server/storage/status.h"
#include "streamd.pb.h"

namespace streamd {

class NetMetrics;
class RequestHandler;

// What the loop remembers of a request until it is answered.
struct Ticket {
  uint64_t id = 0;
  v1::Request::BodyCase kind = v1::Request::BODY_NOT_SET;
  size_t frame_bytes = 0;
  std::chrono::steady_clock::time_point received;
};

// Something a connection waits on that must be cancelled when it closes (a long-poll read).
class Waiter {
 public:
  virtual ~Waiter() = default;
  // Answer now with what there is (shutdown drains without waiting out the long-poll).
  virtual void finish_now() = 0;
  // Drop without answering (the connection is closing).
  virtual void cancel() = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Context {
    RequestHandler& handler;
    NetMetrics& metrics;
    const Limits& limits;
    const auth::Authenticator& auth;
    bool tls = false;  // the stream is TLS (a TLS handshake on a plain listener is then no mistake)
    // Called once, on the loop, when the connection has closed.
    std::function<void(uint64_t connection_id)> on_closed;
  };

  Connection(asio::io_context& io, std::unique_ptr<ByteStream> stream, uint64_t connection_id, Context context);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Shutdown: requests read from now on are refused with UNAVAILABLE, waiting reads answer at once,
  // and the connection closes as soon as everything read has been answered and written.
  void drain();
  // Closes at once; answers still to come are dropped.
  void close();

  // Answers a request; a no-op once closed.
  void reply(const Ticket& ticket, const v1::Response& response);
  void reply_error(const Ticket& ticket, const Status& status);
  // Answers with an already-encoded frame; `error_name` is empty for a success.
  void reply_frame(const Ticket& ticket, std::string frame, std::string_view error_name);

  void add_waiter(uint64_t key, std::shared_ptr<Waiter> waiter);
  void remove_waiter(uint64_t key);
  // A long-poll read starts waiting: false when limits.max_waiting_reads already wait (the read is
  // then refused). Each true is matched by one stop_waiting().
  bool start_waiting();
  void stop_waiting();

  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  bool closed() const { return closed_; }
  bool draining() const { return draining_; }
  uint64_t max_frame_bytes() const { return context_.limits.max_frame_bytes; }
  uint32_t max_waiting_reads() const { return context_.limits.max_waiting_reads; }
  // Who the connection is; unrestricted before Hello only when there is no access file.
  const auth::Principal& principal() const { return principal_; }

 private:
  static asio::awaitable<void> reader(std::shared_ptr<Connection> self);
  static asio::awaitable<void> writer(std::shared_ptr<Connection> self);
  static asio::awaitable<void> watchdog(std::shared_ptr<Connection> self);

  // After the reader handed out every whole frame: a frame left partly received starts its
  // limits.frame_timeout clock (slow-loris defence), kept by the watchdog.
  void note_partial_frame();
  // Parses and dispatches one frame; false when the connection must stop reading.
  bool handle_frame(std::string_view body);
  // Resolves the connection's proof (Hello's token or the client certificate) to its principal, at
  // Hello and again after a reload; false (and a close) when it is refused.
  bool authenticate(uint64_t request_id);
  // PERMISSION_DENIED unless the principal may do what `request` asks; true when it was refused.
  bool refuse_unpermitted(const Ticket& ticket, const v1::Request& request);
  // Answers a protocol violation, then closes once that answer is written.
  void fail(uint64_t request_id, const Status& status);
  void enqueue(std::string frame);
  // A write to the socket failed: the connection is closed.
  void write_failed(const std::error_code& ec);
  // Awaitable forms of the stream's callback operations, for the coroutines.
  asio::awaitable<std::tuple<std::error_code, size_t>> read_some(std::span<char> into);
  asio::awaitable<std::tuple<std::error_code, size_t>> write_all(const std::vector<std::string_view>& buffers);
  void adjust_inflight(int64_t delta);
  void maybe_finish();
  void finish_waiters();

  std::unique_ptr<ByteStream> stream_;
  const uint64_t id_;
  Context context_;
  std::string peer_;

  FrameReader frames_;
  std::deque<std::string> write_queue_;
  // Timers never set to expire; cancel() wakes the coroutine waiting on them.
  asio::steady_timer write_signal_;
  asio::steady_timer resume_signal_;
  asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  // When the frame now partly in frames_ began to arrive (unset: none, or reading is paused).
  std::optional<std::chrono::steady_clock::time_point> partial_since_;
  // When the watchdog next wakes by itself.
  std::chrono::steady_clock::time_point watchdog_wake_ = std::chrono::steady_clock::time_point::max();

  uint64_t inflight_bytes_ = 0;
  uint64_t unanswered_ = 0;  // requests read and not yet answered
  bool hello_done_ = false;
  // How the connection proved who it is (a token only as its digest), whom that names, and under
  // which access table; a reload resolves the proof again.
  auth::Proof proof_;
  auth::Principal principal_;
  uint64_t auth_generation_ = 0;
  bool read_any_ = false;  // a first read has completed (a TLS hello shows in the first bytes)
  bool reading_paused_ = false;
  bool reading_stopped_ = false;  // after EOF or a violation: answer what is in flight, then close
  bool draining_ = false;
  bool closed_ = false;
  std::map<uint64_t, std::shared_ptr<Waiter>> waiters_;
  uint32_t waiting_reads_ = 0;
};

}  // namespace streamd
