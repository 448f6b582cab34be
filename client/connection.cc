#include "client/connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "client/broker_socket.h"
#include "client/response_decoding.h"
#include "proto/framing.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

// The longest frame head a request has: the length, then the id field's tag and varint.
constexpr size_t kMaxRequestHead = kFrameHeaderBytes + 11;

// Writes the frame head of a request with `id` into `head`, its length left for later
// (write_frame_length); returns the head's size. The id goes out in front of the caller's fields,
// which are not copied together with it.
size_t encode_request_head(uint64_t id, char (&head)[kMaxRequestHead]) {
  size_t size = kFrameHeaderBytes;
  head[size++] = static_cast<char>(0x08);  // Request.id, varint
  for (uint64_t v = id; true; v >>= 7) {
    if (v < 0x80) {
      head[size++] = static_cast<char>(v);
      return size;
    }
    head[size++] = static_cast<char>((v & 0x7f) | 0x80);
  }
}

}  // namespace

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)), reactor_(options_.reactor), decoder_(kMaxAnswerBytes) {}

Connection::~Connection() {
  close();
  std::lock_guard connect_lock(connect_mutex_);
  if (reactor_) reactor_->wait_idle(this);
  std::lock_guard lock(mutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  tls_.reset();
}

Status Connection::connect(std::chrono::milliseconds timeout) {
  auto generation = ensure_connected(Clock::now() + timeout);
  return generation.status();
}

uint64_t Connection::max_frame_bytes() const {
  std::lock_guard lock(mutex_);
  return max_frame_bytes_;
}

std::string Connection::broker_version() const {
  std::lock_guard lock(mutex_);
  return broker_version_;
}

Status Connection::call(v1::Request& request, v1::Response* response, std::chrono::milliseconds timeout) {
  struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    Status status;
  };
  auto waiter = std::make_shared<Waiter>();
  call_async(request, timeout, [waiter, response](const Status& status, v1::Response& answer) {
    std::lock_guard lock(waiter->mutex);
    waiter->status = status;
    if (response != nullptr) response->Swap(&answer);
    waiter->done = true;
    waiter->cv.notify_one();
  });
  // The callback always runs: on an answer, on the deadline (the reactor thread tears the socket down), or
  // on a broken socket.
  std::unique_lock lock(waiter->mutex);
  waiter->cv.wait(lock, [&] { return waiter->done; });
  return waiter->status;
}

void Connection::call_async(v1::Request& request, std::chrono::milliseconds timeout, Callback done,
                            uint64_t same_socket_as, uint64_t* sent_on) {
  send_request(request, timeout, PendingRequest{{}, std::move(done), {}}, same_socket_as, sent_on);
}

void Connection::call_async_encoded(std::span<const std::string_view> fields, std::chrono::milliseconds timeout,
                                    Callback done, uint64_t same_socket_as, uint64_t* sent_on) {
  send(fields, timeout, PendingRequest{{}, std::move(done), {}}, same_socket_as, sent_on);
}

void Connection::call_async_raw(v1::Request& request, std::chrono::milliseconds timeout, RawCallback done) {
  send_request(request, timeout, PendingRequest{{}, {}, std::move(done)}, 0, nullptr);
}

void Connection::send_request(v1::Request& request, std::chrono::milliseconds timeout, PendingRequest pending,
                              uint64_t same_socket_as, uint64_t* sent_on) {
  // Serialized without its id (proto3 leaves a zero out); the id is prepended once it is assigned.
  request.clear_id();
  const std::string fields = request.SerializeAsString();
  const std::string_view piece = fields;
  send({&piece, 1}, timeout, std::move(pending), same_socket_as, sent_on);
}

void Connection::send(std::span<const std::string_view> fields, std::chrono::milliseconds timeout,
                      PendingRequest pending, uint64_t same_socket_as, uint64_t* sent_on) {
  if (timeout.count() <= 0) timeout = options_.request_timeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  pending.deadline = deadline;
  // A failed request's callback runs with none of the connection's locks held: it may take locks of
  // its own that other threads hold while calling into the connection, or send again.
  auto fail = [&pending](const Error& error) { pending.fail(error); };
  if (sent_on != nullptr) *sent_on = 0;
  if (same_socket_as != 0) {
    bool gone;
    {
      std::lock_guard lock(mutex_);
      gone = !connected_ || generation_ != same_socket_as;
    }
    if (gone) return fail(broker_unavailable(options_.broker, "the socket of the requests before this one is gone"));
  }
  // A pinned request never (re)connects: it may come from a completion callback on the reactor thread,
  // which must not wait for a connection. The generation is checked again under the write lock.
  Result<uint64_t> generation =
      same_socket_as != 0 ? Result<uint64_t>(same_socket_as) : ensure_connected(deadline);
  if (!generation.ok()) return fail(generation.error());

  uint64_t id;
  uint64_t max_frame;
  {
    std::lock_guard lock(mutex_);
    id = pending_.next_id();
    max_frame = max_frame_bytes_;
  }
  char head[kMaxRequestHead];
  const size_t head_size = encode_request_head(id, head);
  std::vector<iovec> iov{{head, head_size}};
  uint64_t body_bytes = head_size - kFrameHeaderBytes;
  for (std::string_view piece : fields) {
    body_bytes += piece.size();
    if (!piece.empty()) iov.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  if (max_frame > 0 && body_bytes > max_frame) {
    return fail(Error(ErrorCode::kFrameTooLarge,
                      {{"size", std::to_string(body_bytes)}, {"max", std::to_string(max_frame)}}));
  }
  write_frame_length(head, static_cast<uint32_t>(body_bytes));

  std::string write_error;
  bool lost = false;
  {
    // The write lock is held from the generation check to the end of the write so that a frame can
    // never reach a newer socket than the one its request was registered on.
    std::lock_guard write_lock(write_mutex_);
    int fd = -1;
    TlsSession* tls = nullptr;
    {
      std::lock_guard lock(mutex_);
      lost = !connected_ || generation_ != *generation;
      if (!lost) {
        pending_.add(id, std::move(pending));
        fd = fd_;
        tls = tls_.get();
      }
    }
    if (!lost) {
      if (sent_on != nullptr) *sent_on = *generation;
      if (tls != nullptr) {
        write_error = write_tls(fd, *tls, iov, sealed_);
      } else if (!write_all(fd, iov)) {
        write_error = std::strerror(errno);
      }
    }
  }
  if (lost) return fail(broker_unavailable(options_.broker, "connection lost before the request was sent"));
  // Outside the write lock: teardown waits for writes in progress (see there).
  if (!write_error.empty()) teardown(*generation, broker_unavailable(options_.broker, write_error));
}

void Connection::close() {
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    generation = generation_;
    ++closes_;
  }
  close_cv_.notify_all();
  teardown(generation, broker_unavailable(options_.broker, "connection closed by the client"));
}

void Connection::stop_reconnecting() {
  {
    std::lock_guard lock(mutex_);
    reconnecting_stopped_ = true;
  }
  close_cv_.notify_all();
}

Result<uint64_t> Connection::ensure_connected(Clock::time_point deadline) {
  uint64_t closes;
  {
    std::lock_guard lock(mutex_);
    if (connected_) return generation_;
    closes = closes_;
  }
  std::lock_guard connect_lock(connect_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (connected_) return generation_;
  }
  forget_last_socket();
  if (options_.tls.enabled && !tls_context_) {
    auto context = TlsClientContext::make(options_.tls);
    if (!context.ok()) return context.error();
    tls_context_ = std::move(*context);
  }
  std::optional<Error> last_error;
  while (true) {
    if (Status due = await_next_attempt(deadline, closes, last_error); !due.ok()) return due.error();
    bool refused = false;
    Result<DialedBroker> dialed =
        dial_broker(options_.broker, {options_.client_name, options_.token}, tls_context_, deadline, &refused);
    Result<uint64_t> generation = dialed.ok() ? adopt(*dialed) : Result<uint64_t>(dialed.error());
    if (generation.ok()) return generation;
    if (dialed.ok()) {
      dialed->tls.reset();
      ::close(dialed->fd);
    }
    Error error = generation.error();
    // A broker that answered, or a failure that another attempt would repeat (TLS), ends here.
    if (!error.retriable()) return error;
    if (refused && options_.fail_when_refused) return error.definite();
    if (count_failure() && options_.on_unreachable) options_.on_unreachable(error);
    if (Clock::now() >= deadline) return error;
    last_error = std::move(error);
  }
}

void Connection::forget_last_socket() {
  // The last socket's registration went with its teardown; a call to on_readable() that had already
  // begun ends before its descriptor and decoder are let go.
  if (reactor_) reactor_->wait_idle(this);
  {
    std::lock_guard write_lock(write_mutex_);
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    tls_.reset();
    if (!reactor_) reactor_ = std::make_shared<Reactor>();
  }
  decoder_ = FrameDecoder(kMaxAnswerBytes);
}

Status Connection::await_next_attempt(Clock::time_point deadline, uint64_t closes,
                                      const std::optional<Error>& last_error) {
  std::unique_lock lock(mutex_);
  if (next_attempt_ > deadline) {
    if (last_error) return *last_error;
    return broker_unavailable(options_.broker, "broker unreachable; the deadline ends before the next reconnect");
  }
  const Clock::time_point attempt_at = next_attempt_;
  if (!close_cv_.wait_until(lock, attempt_at, [&] { return closes_ != closes || reconnecting_stopped_; })) {
    return Status();
  }
  if (reconnecting_stopped_) {
    return broker_unavailable(options_.broker, "not reconnecting: the client is stopping").definite();
  }
  return broker_unavailable(options_.broker, "connection closed by the client");
}

Result<uint64_t> Connection::adopt(DialedBroker& dialed) {
  bool reachable_again;
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    registration_ = reactor_->add(dialed.fd, this);
    if (registration_ == 0) return broker_unavailable(options_.broker, std::strerror(errno));
    fd_ = dialed.fd;
    tls_ = std::move(dialed.tls);
    connected_ = true;
    generation = ++generation_;
    max_frame_bytes_ = dialed.max_frame_bytes;
    broker_version_ = dialed.broker_version;
    failures_ = 0;
    next_attempt_ = {};
    reachable_again = std::exchange(unreachable_, false);
  }
  if (reachable_again && options_.on_reachable) options_.on_reachable();
  return generation;
}

bool Connection::count_failure() {
  std::lock_guard lock(mutex_);
  ++failures_;
  next_attempt_ = Clock::now() + options_.reconnect_backoff.delay(failures_);
  return !std::exchange(unreachable_, true);
}

void Connection::on_readable() {
  uint64_t generation;
  int fd;
  TlsSession* tls;
  {
    std::lock_guard lock(mutex_);
    if (!connected_) return;
    generation = generation_;
    fd = fd_;
    tls = tls_.get();
  }
  TlsSession::Opened opened = TlsSession::Opened::kMore;
  const ssize_t n = tls != nullptr ? receive_tls_into(fd, *tls, received_, decoder_, MSG_DONTWAIT, &opened)
                                   : receive_into(fd, decoder_, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
    teardown(generation,
             broker_unavailable(options_.broker, n == 0 ? "connection closed by the broker" : std::strerror(errno)));
    return;
  }
  if (opened != TlsSession::Opened::kMore) {
    // Answers the broker completed before its close_notify are still answered.
    dispatch_frames(generation);
    teardown(generation, broker_unavailable(options_.broker, opened == TlsSession::Opened::kClosed
                                                                 ? "connection closed by the broker"
                                                                 : tls->reason()));
    return;
  }
  dispatch_frames(generation);
}

void Connection::on_tick() {
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    if (!connected_) return;
    generation = generation_;
  }
  expire(generation);
}

void Connection::dispatch_frames(uint64_t generation) {
  std::string_view body;
  FrameDecoder::State state;
  while ((state = decoder_.next(&body)) == FrameDecoder::State::kFrame) {
    // Only the envelope is read here; the body is parsed for the request that wants it parsed.
    ResponseView view;
    std::optional<Error> error;
    if (!scan_response(body, &view) || (!view.error.empty() && !(error = decode_error(view.error)))) {
      teardown(generation, Error(ErrorCode::kProtocolError, "unparsable answer from the broker"));
      return;
    }
    Status status = error && error->code() != 0 ? Status(*error) : Status();
    if (view.id == 0 && !status.ok()) {
      // A connection-level refusal (PROTOCOL_ERROR, FRAME_TOO_LARGE): the broker closes next.
      teardown(generation, status.error());
      return;
    }
    std::optional<PendingRequest> taken;
    {
      std::lock_guard lock(mutex_);
      taken = pending_.take(view.id);
    }
    if (!taken) continue;
    PendingRequest& pending = *taken;
    if (pending.raw) {
      pending.raw(status, status.ok() ? view.body : std::string_view());
      continue;
    }
    // An arena makes the many small messages of an answer one bump allocation each.
    google::protobuf::Arena arena;
    v1::Response& response = *google::protobuf::Arena::CreateMessage<v1::Response>(&arena);
    if (!response.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      pending.fail(Error(ErrorCode::kProtocolError, "unparsable answer from the broker"));
      teardown(generation, Error(ErrorCode::kProtocolError, "unparsable answer from the broker"));
      return;
    }
    pending.done(status, response);
  }
  if (state == FrameDecoder::State::kTooLarge) {
    teardown(generation, Error(ErrorCode::kFrameTooLarge, "answer larger than the client accepts"));
  }
}

void Connection::expire(uint64_t generation) {
  std::vector<PendingRequest> expired;
  {
    std::lock_guard lock(mutex_);
    expired = pending_.take_expired(Clock::now());
  }
  if (expired.empty()) return;
  // The socket goes first, so that a caller woken by its timeout finds it gone and reconnects rather
  // than queueing behind the requests about to fail.
  teardown(generation, broker_unavailable(options_.broker, "connection reset after a request timed out"));
  // An expired request may still be being written (the socket was full); it fails once that ends.
  await_writes();
  for (PendingRequest& pending : expired) pending.fail(broker_unavailable(options_.broker, "timeout"));
}

void Connection::teardown(uint64_t generation, const Error& error) {
  std::vector<PendingRequest> failed;
  {
    std::lock_guard lock(mutex_);
    if (!connected_ || generation_ != generation) return;
    connected_ = false;
    failed = pending_.take_all();
    reactor_->remove(registration_);
    registration_ = 0;
    // The descriptor stays open (only shut down) until the next connection attempt closes it under the
    // write lock, so that no concurrent writer can see its number reused.
    ::shutdown(fd_, SHUT_RDWR);
  }
  await_writes();
  for (PendingRequest& pending : failed) pending.fail(error);
}

void Connection::await_writes() {
  // A request is registered before it is written, so it can fail while its writer is still sending
  // from the caller's buffers — which the failure lets the caller free or reuse (a producer requeues
  // the batch). The socket is shut down before this is called, so a write in progress, even one
  // blocked on a full socket, ends at once; holding the write lock once means it has.
  std::lock_guard write_lock(write_mutex_);
}

}  // namespace streamd::client
