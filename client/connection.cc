#include "client/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "client/response_decoding.h"
#include "proto/framing.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

// Answers are trusted more than requests: a Read answer may exceed the broker's request limit.
constexpr uint64_t kMaxResponseBytes = 1ull << 30;
constexpr size_t kReadChunk = 256 * 1024;

std::string address_text(const BrokerAddress& a) {
  return (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

Error unavailable(const BrokerAddress& broker, std::string reason) {
  return Error(ErrorCode::kUnavailable, {{"broker", address_text(broker)}, {"reason", std::move(reason)}});
}

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

int millis_until(Connection::Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Connection::Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1'000'000));
}

// Blocking send of the buffers laid end to end; false with errno set on failure. Consumes `iov`.
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

std::string serialize_frame(const v1::Request& request) {
  const size_t body = request.ByteSizeLong();
  std::string frame(kFrameHeaderBytes + body, '\0');
  write_frame_length(frame.data(), static_cast<uint32_t>(body));
  request.SerializeToArray(frame.data() + kFrameHeaderBytes, static_cast<int>(body));
  return frame;
}

}  // namespace

Result<BrokerAddress> parse_broker_address(std::string_view text) {
  auto bad = [&](std::string why) {
    return Error(ErrorCode::kStreamMisconfigured, "not a broker address HOST:PORT: " + why,
                 {{"field", "broker"}, {"value", std::string(text)}});
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("missing port");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return bad("port is not a number in 1..65535");
  }
  return BrokerAddress{std::string(host), static_cast<uint16_t>(port)};
}

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)), reactor_(options_.reactor), decoder_(kMaxResponseBytes) {}

Connection::~Connection() {
  close();
  std::lock_guard connect_lock(connect_mutex_);
  if (reactor_) reactor_->wait_idle(this);
  std::lock_guard lock(mutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
  send_request(request, timeout, Pending{{}, std::move(done), {}}, same_socket_as, sent_on);
}

void Connection::call_async_encoded(std::span<const std::string_view> fields, std::chrono::milliseconds timeout,
                                    Callback done, uint64_t same_socket_as, uint64_t* sent_on) {
  send(fields, timeout, Pending{{}, std::move(done), {}}, same_socket_as, sent_on);
}

void Connection::call_async_raw(v1::Request& request, std::chrono::milliseconds timeout, RawCallback done) {
  send_request(request, timeout, Pending{{}, {}, std::move(done)}, 0, nullptr);
}

void Connection::send_request(v1::Request& request, std::chrono::milliseconds timeout, Pending pending,
                              uint64_t same_socket_as, uint64_t* sent_on) {
  // Serialized without its id (proto3 leaves a zero out); the id is prepended once it is assigned.
  request.clear_id();
  const std::string fields = request.SerializeAsString();
  const std::string_view piece = fields;
  send({&piece, 1}, timeout, std::move(pending), same_socket_as, sent_on);
}

void Connection::Pending::fail(const Error& error) {
  if (raw) {
    raw(Status(error), {});
  } else {
    v1::Response empty;
    done(Status(error), empty);
  }
}

void Connection::send(std::span<const std::string_view> fields, std::chrono::milliseconds timeout, Pending pending,
                      uint64_t same_socket_as, uint64_t* sent_on) {
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
    if (gone) return fail(unavailable(options_.broker, "the socket of the requests before this one is gone"));
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
    id = next_id_++;
    max_frame = max_frame_bytes_;
  }
  // The frame header and the id go out in front of the fields, which are not copied together.
  char head[kFrameHeaderBytes + 11];
  size_t head_size = kFrameHeaderBytes;
  head[head_size++] = static_cast<char>(0x08);  // Request.id, varint
  for (uint64_t v = id; true; v >>= 7) {
    if (v < 0x80) {
      head[head_size++] = static_cast<char>(v);
      break;
    }
    head[head_size++] = static_cast<char>((v & 0x7f) | 0x80);
  }
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

  int write_error = 0;
  bool lost = false;
  {
    // The write lock is held from the generation check to the end of the write so that a frame can
    // never reach a newer socket than the one its request was registered on.
    std::lock_guard write_lock(write_mutex_);
    int fd = -1;
    {
      std::lock_guard lock(mutex_);
      lost = !connected_ || generation_ != *generation;
      if (!lost) {
        pending_.emplace(id, std::move(pending));
        deadlines_.emplace(deadline, id);
        fd = fd_;
      }
    }
    if (!lost) {
      if (sent_on != nullptr) *sent_on = *generation;
      if (!write_all(fd, iov)) write_error = errno;
    }
  }
  if (lost) return fail(unavailable(options_.broker, "connection lost before the request was sent"));
  // Outside the write lock: teardown waits for writes in progress (see there).
  if (write_error != 0) teardown(*generation, unavailable(options_.broker, std::strerror(write_error)));
}

void Connection::close() {
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    generation = generation_;
    ++closes_;
  }
  close_cv_.notify_all();
  teardown(generation, unavailable(options_.broker, "connection closed by the client"));
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
  // The last socket's registration went with its teardown; a call to on_readable() that had already
  // begun ends before its descriptor and decoder are let go.
  if (reactor_) reactor_->wait_idle(this);
  {
    std::lock_guard write_lock(write_mutex_);
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!reactor_) reactor_ = std::make_shared<Reactor>();
  }
  decoder_ = FrameDecoder(kMaxResponseBytes);
  std::optional<Error> last_error;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      if (next_attempt_ > deadline) {
        if (last_error) return *last_error;
        return unavailable(options_.broker, "broker unreachable; the deadline ends before the next reconnect");
      }
      const Clock::time_point attempt_at = next_attempt_;
      if (close_cv_.wait_until(lock, attempt_at, [&] { return closes_ != closes || reconnecting_stopped_; })) {
        if (reconnecting_stopped_) return unavailable(options_.broker, "not reconnecting: the client is stopping").definite();
        return unavailable(options_.broker, "connection closed by the client");
      }
    }
    int fd = -1;
    bool refused = false;
    Status status = dial_and_hello(deadline, &fd, &refused);
    bool reachable_again = false;
    uint64_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      if (status.ok()) {
        registration_ = reactor_->add(fd, this);
        if (registration_ == 0) status = unavailable(options_.broker, std::strerror(errno));
      }
      if (status.ok()) {
        fd_ = fd;
        connected_ = true;
        ++generation_;
        failures_ = 0;
        next_attempt_ = {};
        reachable_again = std::exchange(unreachable_, false);
        generation = generation_;
      }
    }
    if (status.ok()) {
      if (reachable_again && options_.on_reachable) options_.on_reachable();
      return generation;
    }
    if (fd >= 0) ::close(fd);
    if (!status.error().is(ErrorCode::kUnavailable)) return status.error();
    if (refused && options_.fail_when_refused) {
      Error definite = status.error();
      return definite.definite();
    }
    bool newly_unreachable;
    {
      std::lock_guard lock(mutex_);
      ++failures_;
      auto backoff = options_.backoff_initial * (1ll << std::min(failures_ - 1, 20));
      next_attempt_ = Clock::now() + std::min<std::chrono::milliseconds>(backoff, options_.backoff_max);
      newly_unreachable = !std::exchange(unreachable_, true);
    }
    if (newly_unreachable && options_.on_unreachable) options_.on_unreachable(status.error());
    if (Clock::now() >= deadline) return status.error();
    last_error = status.error();
  }
}

Status Connection::dial_and_hello(Clock::time_point deadline, int* fd_out, bool* refused) {
  const BrokerAddress& broker = options_.broker;
  // Refused until an address answers otherwise: every address of the host said no.
  *refused = true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  const std::string port = std::to_string(broker.port);
  if (int rc = ::getaddrinfo(broker.host.c_str(), port.c_str(), &hints, &addresses); rc != 0) {
    *refused = rc != EAI_AGAIN;  // a temporary failure of name resolution is not an answer
    return unavailable(broker, std::string("cannot resolve host: ") + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(addresses, &::freeaddrinfo);

  std::string last_error = "no address";
  for (addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      *refused = false;
      continue;
    }
    // Any outcome but a refusal (a timeout, a Hello that went wrong) means the broker may be there.
    auto fail = [&](std::string why, int error = 0) {
      last_error = std::move(why);
      ::close(fd);
      if (error != ECONNREFUSED && error != ENETUNREACH && error != EHOSTUNREACH) *refused = false;
    };
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      const int error = errno;
      fail(std::strerror(error), error);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, millis_until(deadline));
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (ready <= 0) {
      fail(ready == 0 ? "connect timed out" : std::strerror(errno));
      continue;
    }
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      fail(std::strerror(so_error), so_error);
      continue;
    }
    // Writes block (a request is sent whole by its caller); the reactor's reads do not (MSG_DONTWAIT).
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    v1::Request hello;
    hello.set_id(0);
    hello.mutable_hello()->set_protocol_version(kProtocolVersion);
    hello.mutable_hello()->set_client_name(options_.client_name);
    hello.mutable_hello()->set_token(options_.token);
    std::string frame = serialize_frame(hello);
    std::vector<iovec> iov{{frame.data(), frame.size()}};
    if (!write_all(fd, iov)) {
      fail(std::strerror(errno));
      continue;
    }
    FrameDecoder decoder(kMaxResponseBytes);
    std::string_view body;
    bool answered = false;
    while (!answered) {
      FrameDecoder::State state = decoder.next(&body);
      if (state == FrameDecoder::State::kFrame) {
        answered = true;
        break;
      }
      if (state == FrameDecoder::State::kTooLarge) break;
      pollfd in{fd, POLLIN, 0};
      if (::poll(&in, 1, millis_until(deadline)) <= 0) break;
      ssize_t n = ::recv(fd, decoder.prepare(kReadChunk), kReadChunk, 0);
      if (n <= 0) break;
      decoder.commit(static_cast<size_t>(n));
    }
    v1::Response response;
    if (!answered || !response.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      fail(answered ? "unparsable Hello answer" : "no Hello answer");
      continue;
    }
    *refused = false;
    if (Status status = status_of(response); !status.ok()) {
      ::close(fd);
      return status;
    }
    std::lock_guard lock(mutex_);
    max_frame_bytes_ = response.hello().max_frame_bytes();
    broker_version_ = response.hello().broker_version();
    *fd_out = fd;
    return Status();
  }
  return unavailable(broker, last_error);
}

void Connection::on_readable() {
  uint64_t generation;
  int fd;
  {
    std::lock_guard lock(mutex_);
    if (!connected_) return;
    generation = generation_;
    fd = fd_;
  }
  ssize_t n = ::recv(fd, decoder_.prepare(kReadChunk), kReadChunk, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
    teardown(generation,
             unavailable(options_.broker, n == 0 ? "connection closed by the broker" : std::strerror(errno)));
    return;
  }
  if (n > 0) decoder_.commit(static_cast<size_t>(n));
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
    Pending pending;
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(view.id);
      if (it == pending_.end()) continue;
      deadlines_.erase({it->second.deadline, it->first});
      pending = std::move(it->second);
      pending_.erase(it);
    }
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
  std::vector<Pending> expired;
  {
    std::lock_guard lock(mutex_);
    const Clock::time_point now = Clock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      auto it = pending_.find(deadlines_.begin()->second);
      expired.push_back(std::move(it->second));
      pending_.erase(it);
      deadlines_.erase(deadlines_.begin());
    }
  }
  if (expired.empty()) return;
  // The socket goes first, so that a caller woken by its timeout finds it gone and reconnects rather
  // than queueing behind the requests about to fail.
  teardown(generation, unavailable(options_.broker, "connection reset after a request timed out"));
  // An expired request may still be being written (the socket was full); it fails once that ends.
  await_writes();
  for (Pending& pending : expired) pending.fail(unavailable(options_.broker, "timeout"));
}

void Connection::teardown(uint64_t generation, const Error& error) {
  std::map<uint64_t, Pending> failed;
  {
    std::lock_guard lock(mutex_);
    if (!connected_ || generation_ != generation) return;
    connected_ = false;
    failed.swap(pending_);
    deadlines_.clear();
    reactor_->remove(registration_);
    registration_ = 0;
    // The descriptor stays open (only shut down) until the next connection attempt closes it under the
    // write lock, so that no concurrent writer can see its number reused.
    ::shutdown(fd_, SHUT_RDWR);
  }
  await_writes();
  for (auto& [id, pending] : failed) pending.fail(error);
}

void Connection::await_writes() {
  // A request is registered before it is written, so it can fail while its writer is still sending
  // from the caller's buffers — which the failure lets the caller free or reuse (a producer requeues
  // the batch). The socket is shut down before this is called, so a write in progress, even one
  // blocked on a full socket, ends at once; holding the write lock once means it has.
  std::lock_guard write_lock(write_mutex_);
}

}  // namespace streamd::client
