#include "server/net/connection.h"

#include <spdlog/spdlog.h>

#include <asio/async_result.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/use_awaitable.hpp>
#include <vector>

#include "server/net/net_metrics.h"
#include "server/net/request_handler.h"
#include "server/net/request_rights.h"
#include "server/net/tls_stream.h"
#include "server/net/wire_convert.h"

namespace streamd {
namespace {

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
// Answers gathered into one write: enough to amortise the syscall, few enough to stay fair.
constexpr size_t kMaxGather = 64;

// Runs a ByteStream operation, which takes a copyable callback, for a coroutine whose completion
// handler is move-only.
template <class Start>
asio::awaitable<std::tuple<std::error_code, size_t>> await_stream(Start start) {
  return asio::async_initiate<decltype(kAsTuple), void(std::error_code, size_t)>(
      [start = std::move(start)](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        start([shared](const std::error_code& ec, size_t n) { (*shared)(ec, n); });
      },
      kAsTuple);
}

}  // namespace

Connection::Connection(asio::io_context& io, std::unique_ptr<ByteStream> stream, uint64_t connection_id,
                       Context context)
    : stream_(std::move(stream)),
      id_(connection_id),
      context_(std::move(context)),
      peer_(stream_->peer()),
      frames_(context_.limits.max_frame_bytes),
      write_signal_(io, std::chrono::steady_clock::time_point::max()),
      resume_signal_(io, std::chrono::steady_clock::time_point::max()),
      idle_timer_(io),
      last_activity_(std::chrono::steady_clock::now()) {}

asio::awaitable<std::tuple<std::error_code, size_t>> Connection::read_some(std::span<char> into) {
  return await_stream([this, into](ByteStream::Done done) { stream_->read_some(into.data(), into.size(), std::move(done)); });
}

asio::awaitable<std::tuple<std::error_code, size_t>> Connection::write_all(const std::vector<std::string_view>& buffers) {
  return await_stream([this, &buffers](ByteStream::Done done) { stream_->write(buffers, std::move(done)); });
}

Connection::~Connection() = default;

void Connection::start() {
  context_.metrics.connections.add(1);
  auto ex = idle_timer_.get_executor();
  asio::co_spawn(ex, reader(shared_from_this()), asio::detached);
  asio::co_spawn(ex, writer(shared_from_this()), asio::detached);
  if (context_.limits.idle_timeout.count() > 0 || context_.limits.frame_timeout.count() > 0)
    asio::co_spawn(ex, watchdog(shared_from_this()), asio::detached);
}

asio::awaitable<void> Connection::reader(std::shared_ptr<Connection> self) {
  const uint64_t budget = self->context_.limits.max_inflight_bytes;
  while (!self->closed_ && !self->reading_stopped_) {
    // Hand out every whole frame already buffered before reading more.
    for (;;) {
      if (self->inflight_bytes_ >= budget) {
        // A frame left half-read while paused is the broker's doing, not the client's.
        self->partial_since_.reset();
        self->reading_paused_ = true;
        co_await self->resume_signal_.async_wait(kAsTuple);
        self->reading_paused_ = false;
        if (self->closed_ || self->reading_stopped_) co_return;
        continue;
      }
      FrameReader::Next next = self->frames_.next();
      if (next.state == FrameReader::State::kNeedMore) break;
      if (next.state == FrameReader::State::kTooLarge) {
        self->fail(0,
                   Status::of(Code::kFrameTooLarge,
                              {{"length", std::to_string(next.declared_length)},
                               {"max_frame_bytes", std::to_string(self->context_.limits.max_frame_bytes)}}));
        co_return;
      }
      if (!self->handle_frame(next.body)) co_return;
    }
    self->note_partial_frame();
    std::span<char> space = self->frames_.writable();
    auto [ec, n] = co_await self->read_some(space);
    if (self->closed_) co_return;
    if (!ec && !self->read_any_ && !self->context_.tls && looks_like_tls_hello({space.data(), n})) {
      // A TLS client on the plaintext listener: say so (in plaintext, which its TLS library will
      // report as not TLS) and close.
      self->fail(0, Status::of(Code::kProtocolError,
                               {{"reason", "a TLS handshake on the plaintext listener; TLS clients connect to tls_listen"}}));
      co_return;
    }
    self->read_any_ = true;
    if (ec) {
      if (ec == asio::error::eof && self->frames_.buffered() > 0) {
        self->fail(0, Status::of(Code::kProtocolError,
                                 {{"reason", "connection ended inside a frame"},
                                  {"buffered_bytes", std::to_string(self->frames_.buffered())}}));
      } else if (ec == asio::error::eof) {
        // The client finished sending (or went away: EOF cannot tell). It gets every answer it is owed;
        // waiting reads answer now rather than hold the connection open for their whole wait.
        self->reading_stopped_ = true;
        self->finish_waiters();
        self->maybe_finish();
      } else {
        spdlog::info("connection {} from {}: read failed: {}", self->id_, self->peer_, ec.message());
        self->context_.metrics.connection_errors.inc();
        self->close();
      }
      co_return;
    }
    self->frames_.commit(n);
    self->last_activity_ = std::chrono::steady_clock::now();
  }
}

void Connection::note_partial_frame() {
  if (frames_.buffered() == 0) {
    partial_since_.reset();
    return;
  }
  if (partial_since_ || context_.limits.frame_timeout.count() == 0) return;
  partial_since_ = std::chrono::steady_clock::now();
  // The watchdog sleeps until its next deadline; wake it only if this one comes sooner, which
  // happens at most once per frame_timeout, not once per read.
  if (*partial_since_ + context_.limits.frame_timeout < watchdog_wake_) idle_timer_.cancel();
}

bool Connection::handle_frame(std::string_view body) {
  auto request = std::make_unique<v1::Request>();
  if (!request->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    fail(0, Status::of(Code::kProtocolError, {{"reason", "the frame is not a Request message"}}));
    return false;
  }
  Ticket ticket{request->id(), request->body_case(), kFrameHeaderBytes + body.size(),
                std::chrono::steady_clock::now()};
  if (ticket.kind == v1::Request::BODY_NOT_SET) {
    fail(ticket.id, Status::of(Code::kProtocolError, {{"reason", "the request names no known operation"}}));
    return false;
  }
  context_.metrics.requests(ticket.kind).inc();
  if (!hello_done_ && ticket.kind != v1::Request::kHello) {
    fail(ticket.id, Status::of(Code::kProtocolError, {{"reason", "the first request must be Hello"}}));
    return false;
  }
  if (ticket.kind == v1::Request::kHello) {
    if (hello_done_) {
      fail(ticket.id, Status::of(Code::kProtocolError, {{"reason", "Hello was already sent"}}));
      return false;
    }
    const auto version = request->hello().protocol_version();
    if (version != kProtocolVersion) {
      fail(ticket.id, Status::of(Code::kProtocolError, {{"reason", "unsupported protocol version"},
                                                        {"protocol_version", std::to_string(version)},
                                                        {"supported", std::to_string(kProtocolVersion)}}));
      return false;
    }
    const std::string& token = request->hello().token();
    const std::string subject = stream_->peer_subject();
    if (!token.empty()) {
      proof_ = auth::Proof::token(token);
    } else if (!subject.empty()) {
      proof_ = auth::Proof::certificate(subject);
    }
    hello_done_ = true;
    if (!authenticate(ticket.id)) return false;
  } else if (auth_generation_ != context_.auth.generation() && !authenticate(ticket.id)) {
    return false;  // the access file was reloaded and no longer knows this connection's token
  }
  ++unanswered_;
  adjust_inflight(static_cast<int64_t>(ticket.frame_bytes));
  if (draining_) {
    reply_error(ticket, Status(Code::kUnavailable, "The broker is shutting down"));
    return true;
  }
  if (refuse_unpermitted(ticket, *request)) return true;
  context_.handler.handle(shared_from_this(), ticket, std::move(request));
  return true;
}

bool Connection::authenticate(uint64_t request_id) {
  std::optional<auth::Principal> principal;
  if (!context_.auth.enabled() || proof_.kind != auth::Proof::Kind::kNothing) principal = context_.auth.resolve(proof_);
  if (!principal) {
    // The token itself is never echoed or logged; the failure is, once, as the connection closes.
    fail(request_id, Status::of(Code::kUnauthenticated,
                                {{"reason", proof_.kind == auth::Proof::Kind::kNothing
                                                ? "Hello carries no token, and the connection no client certificate"
                                                : "the token is not known"}}));
    return false;
  }
  principal_ = std::move(*principal);
  auth_generation_ = context_.auth.generation();
  return true;
}

bool Connection::refuse_unpermitted(const Ticket& ticket, const v1::Request& request) {
  const NeededRight need = needed_right(request);
  bool allowed = true;
  switch (need.kind) {
    case NeededRight::Kind::kNothing:
      break;
    case NeededRight::Kind::kRight:
      allowed = principal_.allows(need.right, need.stream);
      break;
    case NeededRight::Kind::kAnyRight:
      allowed = principal_.allows_any(need.stream);
      break;
    case NeededRight::Kind::kRightAnywhere:
      allowed = principal_.holds_anywhere(need.right);
      break;
    case NeededRight::Kind::kRightEverywhere:
      allowed = principal_.holds_everywhere(need.right);
      break;
  }
  if (allowed) return false;
  Status refusal = Status::of(Code::kPermissionDenied,
                              {{"operation", std::string(operation_name(ticket.kind))},
                               {"right", need.kind == NeededRight::Kind::kAnyRight
                                             ? std::string("any")
                                             : std::string(auth::right_name(need.right))},
                               {"principal", principal_.name()}});
  switch (need.kind) {
    case NeededRight::Kind::kRightAnywhere:
      refusal.with("scope", "some stream");
      break;
    case NeededRight::Kind::kRightEverywhere:
      refusal.with("scope", "every stream");
      break;
    default:
      refusal.with("stream", std::string(need.stream));
  }
  reply_error(ticket, refusal);
  return true;
}

void Connection::fail(uint64_t request_id, const Status& status) {
  spdlog::warn("connection {} from {}: {}; closing", id_, peer_, status.to_string());
  context_.metrics.connection_errors.inc();
  v1::Response response;
  response.set_id(request_id);
  error_to_wire(status, response.mutable_error());
  reading_stopped_ = true;
  // Answers still owed to earlier requests are dropped: the stream is no longer trusted.
  unanswered_ = 0;
  enqueue(encode_frame(response));
}

void Connection::reply(const Ticket& ticket, const v1::Response& response) {
  std::string_view error_name;
  if (response.has_error()) error_name = response.error().name();
  reply_frame(ticket, encode_frame(response), error_name);
}

void Connection::reply_error(const Ticket& ticket, const Status& status) {
  v1::Response response;
  response.set_id(ticket.id);
  error_to_wire(status, response.mutable_error());
  reply(ticket, response);
}

void Connection::reply_frame(const Ticket& ticket, std::string frame, std::string_view error_name) {
  if (closed_) return;
  context_.metrics.latency(ticket.kind)
      .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - ticket.received).count());
  if (!error_name.empty()) context_.metrics.errors(ticket.kind, error_name).inc();
  if (unanswered_ > 0) --unanswered_;
  adjust_inflight(-static_cast<int64_t>(ticket.frame_bytes));
  enqueue(std::move(frame));
}

void Connection::enqueue(std::string frame) {
  if (write_queue_.empty() && !closed_) {
    // Nothing is being written, so the answer may go out here at once: it usually fits the socket
    // buffer, and the writer is then never woken (a timer cancel and two handler runs per answer).
    std::error_code ec;
    const size_t n = stream_->write_now(frame, ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) return write_failed(ec);
    if (!ec) {
      last_activity_ = std::chrono::steady_clock::now();
      if (n == frame.size()) {
        maybe_finish();
        return;
      }
      frame.erase(0, n);
    }
  }
  adjust_inflight(static_cast<int64_t>(frame.size()));
  write_queue_.push_back(std::move(frame));
  write_signal_.cancel();
}

void Connection::write_failed(const std::error_code& ec) {
  spdlog::info("connection {} from {}: write failed: {}", id_, peer_, ec.message());
  context_.metrics.connection_errors.inc();
  close();
}

void Connection::adjust_inflight(int64_t delta) {
  inflight_bytes_ = static_cast<uint64_t>(static_cast<int64_t>(inflight_bytes_) + delta);
  context_.metrics.inflight_bytes.add(delta);
  if (delta < 0 && reading_paused_ && inflight_bytes_ < context_.limits.max_inflight_bytes)
    resume_signal_.cancel();
}

asio::awaitable<void> Connection::writer(std::shared_ptr<Connection> self) {
  std::vector<std::string_view> buffers;
  while (!self->closed_) {
    if (self->write_queue_.empty()) {
      self->maybe_finish();
      if (self->closed_) break;
      co_await self->write_signal_.async_wait(kAsTuple);
      continue;
    }
    const size_t count = std::min(self->write_queue_.size(), kMaxGather);
    buffers.clear();
    size_t bytes = 0;
    for (size_t i = 0; i < count; ++i) {
      buffers.emplace_back(self->write_queue_[i]);
      bytes += self->write_queue_[i].size();
    }
    auto [ec, n] = co_await self->write_all(buffers);
    if (self->closed_) break;
    if (ec) {
      self->write_failed(ec);
      break;
    }
    self->write_queue_.erase(self->write_queue_.begin(),
                             self->write_queue_.begin() + static_cast<long>(count));
    self->last_activity_ = std::chrono::steady_clock::now();
    self->adjust_inflight(-static_cast<int64_t>(bytes));
  }
}

asio::awaitable<void> Connection::watchdog(std::shared_ptr<Connection> self) {
  using std::chrono::steady_clock;
  const auto idle = self->context_.limits.idle_timeout;
  const auto frame_timeout = self->context_.limits.frame_timeout;
  while (!self->closed_) {
    // Re-armed from the last activity, so a busy connection costs one wake per idle period; a frame
    // in progress brings the wake forward to its deadline.
    auto wake = steady_clock::time_point::max();
    if (idle.count() > 0) wake = self->last_activity_ + idle;
    if (frame_timeout.count() > 0 && self->partial_since_) wake = std::min(wake, *self->partial_since_ + frame_timeout);
    self->watchdog_wake_ = wake;
    self->idle_timer_.expires_at(wake);
    co_await self->idle_timer_.async_wait(kAsTuple);
    if (self->closed_) break;
    const auto now = steady_clock::now();
    if (frame_timeout.count() > 0 && self->partial_since_ && now - *self->partial_since_ >= frame_timeout) {
      // Bytes keep coming, so the idle timeout never fires: a client dribbling a frame (slow-loris)
      // would hold its place for ever.
      self->fail(0, Status::of(Code::kProtocolError,
                               {{"reason", "a frame did not arrive whole within limits.frame_timeout"},
                                {"frame_timeout_ms", std::to_string(frame_timeout.count())},
                                {"buffered_bytes", std::to_string(self->frames_.buffered())}}));
      break;
    }
    if (idle.count() == 0 || now - self->last_activity_ < idle) continue;
    if (self->unanswered_ > 0 && self->write_queue_.empty()) {
      // Waiting on the broker (a long-poll read) is not idleness.
      self->last_activity_ = now;
      continue;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(idle).count();
    if (self->write_queue_.empty()) {
      spdlog::info("connection {} from {}: idle for {}s; closing", self->id_, self->peer_, seconds);
    } else {
      // Answers queued and no write finished for a whole period: the client stopped reading. Its
      // memory (up to max_inflight_bytes) is released instead of held for as long as it stays silent.
      spdlog::warn("connection {} from {}: has not read its answers for {}s; closing", self->id_, self->peer_,
                   seconds);
      self->context_.metrics.connection_errors.inc();
    }
    self->close();
  }
}

bool Connection::start_waiting() {
  if (waiting_reads_ >= context_.limits.max_waiting_reads) return false;
  ++waiting_reads_;
  return true;
}

void Connection::stop_waiting() {
  if (waiting_reads_ > 0) --waiting_reads_;
}

void Connection::maybe_finish() {
  if (closed_ || !write_queue_.empty()) return;
  if ((reading_stopped_ || draining_) && unanswered_ == 0) close();
}

void Connection::drain() {
  if (closed_) return;
  draining_ = true;
  finish_waiters();
  maybe_finish();
}

void Connection::finish_waiters() {
  // Copy: finishing a waiter answers and unregisters it.
  auto waiters = waiters_;
  for (auto& [key, waiter] : waiters) waiter->finish_now();
}

void Connection::add_waiter(uint64_t key, std::shared_ptr<Waiter> waiter) {
  waiters_[key] = std::move(waiter);
}

void Connection::remove_waiter(uint64_t key) {
  waiters_.erase(key);
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  stream_->close();
  write_signal_.cancel();
  resume_signal_.cancel();
  idle_timer_.cancel();
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [key, waiter] : waiters) waiter->cancel();
  context_.metrics.inflight_bytes.add(-static_cast<int64_t>(inflight_bytes_));
  inflight_bytes_ = 0;
  // The write queue stays until destruction: an aborted write may still name its buffers.
  context_.metrics.connections.add(-1);
  if (context_.on_closed) context_.on_closed(id_);
}

}  // namespace streamd
