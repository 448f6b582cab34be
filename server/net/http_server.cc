#include "server/net/http_server.h"

#include <spdlog/spdlog.h>

#include <asio/io_context.hpp>
#include <asio/ip/address.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "server/metrics/metrics.h"
#include "server/net/listener.h"

namespace streamd {
namespace {

constexpr std::string_view kEndOfHead = "\r\n\r\n";
constexpr size_t kReadSize = 16 << 10;
constexpr size_t kMaxDrainBytes = 8 << 20;

HttpResponse plain(int status, std::string text) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(text) + "\n"};
}

// What every connection of one server shares; kept alive by each of them, so a connection may
// outlive the server's close.
struct HttpShared {
  HttpServer::Handler handler;
  HttpServerOptions options;
  uint32_t open = 0;  // connections alive; the loop thread's
};

// One client connection: requests one after another, each answered before the next is read.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(asio::io_context& io, std::unique_ptr<ByteStream> stream, std::shared_ptr<HttpShared> shared,
                 bool tls, bool loopback)
      : io_(io),
        stream_(std::move(stream)),
        shared_(std::move(shared)),
        options_(shared_->options),
        tls_(tls),
        loopback_(loopback),
        deadline_(io) {
    ++shared_->open;
    if (shared_->options.connections != nullptr) shared_->options.connections->add(1);
  }
  ~HttpConnection() {
    --shared_->open;
    if (shared_->options.connections != nullptr) shared_->options.connections->add(-1);
  }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void start() { next_request(); }

  // Answers at once and closes: for a connection past max_connections.
  void refuse(HttpResponse response) {
    closing_ = true;
    write_response(std::move(response), true);
  }

 private:
  // Waits for (or finds in the buffer) the next request's head.
  void next_request() {
    if (buffer_.empty()) {
      arm(options_.idle_timeout);
    } else {
      arm(options_.request_timeout);
    }
    read_head();
  }

  void arm(std::chrono::milliseconds timeout) {
    const uint64_t armed = ++timer_generation_;
    deadline_.expires_after(timeout);
    deadline_.async_wait([weak = weak_from_this(), armed](const std::error_code& ec) {
      auto self = weak.lock();
      if (!self || ec || self->timer_generation_ != armed) return;
      self->stream_->close();  // the read or write in flight then fails, which ends the connection
    });
  }

  void disarm() {
    ++timer_generation_;
    deadline_.cancel();
  }

  void read_more(void (HttpConnection::*then)()) {
    const size_t used = buffer_.size();
    buffer_.resize(used + kReadSize);
    stream_->read_some(buffer_.data() + used, kReadSize,
                       [self = shared_from_this(), used, then](const std::error_code& ec, size_t n) {
                         self->buffer_.resize(used + (ec ? 0 : n));
                         if (ec) return self->end();
                         // A request's first byte starts its clock; idle time before it does not count.
                         if (used == 0 && !self->in_request_) {
                           self->in_request_ = true;
                           self->arm(self->options_.request_timeout);
                         }
                         ((*self).*then)();
                       });
  }

  void read_head() {
    const size_t end = buffer_.find(kEndOfHead);
    if (end == std::string::npos) {
      if (buffer_.size() > options_.max_head_bytes) return fail(plain(431, "request head too large"));
      return read_more(&HttpConnection::read_head);
    }
    if (end + kEndOfHead.size() > options_.max_head_bytes) return fail(plain(431, "request head too large"));
    in_request_ = true;
    HeadParse parsed = parse_head(std::string_view(buffer_).substr(0, end + 2));
    if (!parsed.request) return fail(plain(parsed.status, parsed.problem));
    if (parsed.content_length > options_.max_body_bytes) {
      return fail(plain(413, "request body of " + std::to_string(parsed.content_length) + " bytes is over the " +
                                 std::to_string(options_.max_body_bytes) + " bytes this listener accepts"));
    }
    request_ = std::move(*parsed.request);
    head_bytes_ = end + kEndOfHead.size();
    body_bytes_ = parsed.content_length;
    const auto expect = request_.header("Expect");
    if (expect && same_header_name(*expect, "100-continue") && buffer_.size() < head_bytes_ + body_bytes_) {
      // The client waits for this before it sends the body (curl does, for large bodies).
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      views_ = {out_};
      return stream_->write(views_, [self = shared_from_this()](const std::error_code& ec, size_t) {
        if (ec) return self->end();
        self->read_body();
      });
    }
    read_body();
  }

  void read_body() {
    if (buffer_.size() < head_bytes_ + body_bytes_) return read_more(&HttpConnection::read_body);
    request_.body = buffer_.substr(head_bytes_, body_bytes_);
    buffer_.erase(0, head_bytes_ + body_bytes_);
    request_.tls = tls_;
    request_.loopback_listener = loopback_;
    request_.peer = stream_->peer();
    in_request_ = false;
    disarm();  // the handler's time is its own (a long-poll may wait); the answer's write is timed
    head_only_ = request_.method == "HEAD";
    keep_alive_ = request_.keep_alive;
    const uint64_t expected = ++replies_;
    auto self = shared_from_this();
    HttpServer::Reply reply = [self, expected](HttpResponse response) {
      asio::post(self->io_, [self, expected, response = std::move(response)]() mutable {
        if (self->replies_ != expected || self->answered_ == expected) return;
        self->answered_ = expected;
        self->write_response(std::move(response), false);
      });
    };
    shared_->handler(std::move(request_), std::move(reply));
  }

  // A request that cannot be served: answered, then the connection closes (its bytes cannot be trusted
  // to frame the next request).
  void fail(HttpResponse response) {
    closing_ = true;
    head_only_ = false;
    write_response(std::move(response), false);
  }

  void write_response(HttpResponse response, bool refused) {
    if (refused) head_only_ = false;
    const bool keep = keep_alive_ && !closing_;
    out_ = format_http_response(response, !head_only_, keep);
    stream_body_ = head_only_ ? nullptr : std::move(response.stream);
    write_out([self = shared_from_this()] { self->after_write(); });
  }

  void write_out(std::function<void()> then) {
    arm(options_.write_timeout);
    views_ = {out_};
    stream_->write(views_, [self = shared_from_this(), then = std::move(then)](const std::error_code& ec, size_t) {
      if (ec) return self->end();
      then();
    });
  }

  void after_write() {
    if (stream_body_) return pull_chunk();
    finish_exchange();
  }

  void pull_chunk() {
    disarm();
    // The callback keeps the connection alive while the source works (nothing else holds it then).
    stream_body_->next([self = shared_from_this()](std::string chunk, bool last) {
      asio::post(self->io_, [self, chunk = std::move(chunk), last]() mutable {
        self->out_.clear();
        if (!chunk.empty()) self->out_ = format_chunk(chunk);
        if (last) {
          self->out_ += format_chunk({});
          self->stream_body_.reset();
        }
        if (self->out_.empty()) return self->pull_chunk();
        self->write_out([self] { self->after_write(); });
      });
    });
  }

  void finish_exchange() {
    if (closing_) return drain();
    if (!keep_alive_) return end();
    next_request();
  }

  // After refusing a request whose bytes may still be arriving (a body over the limit), reads and
  // drops them for a moment before closing: closing with unread bytes would reset the connection,
  // and the client could lose the answer that says why.
  void drain() {
    arm(std::chrono::seconds(1));
    buffer_.resize(kReadSize);
    stream_->read_some(buffer_.data(), buffer_.size(), [self = shared_from_this()](const std::error_code& ec, size_t n) {
      if (ec || (self->drained_ += n) > kMaxDrainBytes) return self->end();
      self->drain();
    });
  }

  void end() {
    disarm();
    stream_body_.reset();
    stream_->close();
  }

  asio::io_context& io_;
  std::unique_ptr<ByteStream> stream_;
  std::shared_ptr<HttpShared> shared_;
  const HttpServerOptions& options_;  // shared_'s
  const bool tls_;
  const bool loopback_;
  asio::steady_timer deadline_;
  uint64_t timer_generation_ = 0;

  std::string buffer_;  // bytes read and not yet consumed by a request
  bool in_request_ = false;
  HttpRequest request_;
  size_t head_bytes_ = 0;
  uint64_t body_bytes_ = 0;
  uint64_t replies_ = 0;   // requests handed to the handler
  uint64_t answered_ = 0;  // the last of them answered
  bool head_only_ = false;
  bool keep_alive_ = false;
  bool closing_ = false;
  std::shared_ptr<HttpBodySource> stream_body_;
  std::string out_;
  std::vector<std::string_view> views_;
  size_t drained_ = 0;
};

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  std::error_code ec;
  std::string literal = host;
  if (literal.size() > 2 && literal.front() == '[' && literal.back() == ']') literal = literal.substr(1, literal.size() - 2);
  const asio::ip::address address = asio::ip::make_address(literal, ec);
  return !ec && address.is_loopback();
}

struct HttpServer::Impl : std::enable_shared_from_this<Impl> {
  struct Listening {
    asio::ip::tcp::acceptor acceptor;
    std::shared_ptr<TlsContext> tls;
    bool loopback = true;
  };

  Impl(asio::io_context& io_context, std::vector<Listening> listeners, Handler h, HttpServerOptions o)
      : io(io_context),
        listening(std::move(listeners)),
        shared(std::make_shared<HttpShared>(HttpShared{std::move(h), o, 0})) {}

  void accept(Listening& on) {
    on.acceptor.async_accept([self = shared_from_this(), &on](const std::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !on.acceptor.is_open()) return;
      if (ec) {
        spdlog::warn("http accept failed: {}", ec.message());
        auto pause = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(100));
        pause->async_wait([self, &on, pause](const std::error_code&) { self->accept(on); });
        return;
      }
      const bool tls = on.tls != nullptr;
      const bool loopback = on.loopback;
      open_stream(std::move(socket), on.tls.get(), "http_tls_listen",
                  [self, tls, loopback](std::unique_ptr<ByteStream> stream) {
                    if (!stream) return;
                    const bool over = self->shared->open >= self->shared->options.max_connections;
                    auto conn = std::make_shared<HttpConnection>(self->io, std::move(stream), self->shared, tls,
                                                                 loopback);
                    if (over) {
                      conn->refuse(plain(503, "too many HTTP connections; try again later"));
                    } else {
                      conn->start();
                    }
                  });
      self->accept(on);
    });
  }

  asio::io_context& io;
  std::vector<Listening> listening;
  std::shared_ptr<HttpShared> shared;
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                      Handler handler, HttpServerOptions options) {
  std::vector<Impl::Listening> listening;
  for (const ListenSpec& spec : listen) {
    auto acceptor = open_acceptor(io, spec.at);
    if (!acceptor.ok()) return acceptor.status();
    listening.push_back(Impl::Listening{std::move(*acceptor), spec.tls, is_loopback_host(spec.at.host)});
  }
  auto impl = std::make_shared<Impl>(io, std::move(listening), std::move(handler), options);
  for (Impl::Listening& on : impl->listening) impl->accept(on);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                      SyncHandler handler, HttpServerOptions options) {
  return start(
      io, listen,
      Handler([handler = std::move(handler)](HttpRequest request, Reply reply) { reply(handler(request)); }),
      options);
}

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port(size_t i) const {
  std::error_code ec;
  return impl_->listening.at(i).acceptor.local_endpoint(ec).port();
}

void HttpServer::close() {
  std::error_code ec;
  for (Impl::Listening& on : impl_->listening) on.acceptor.close(ec);
}

}  // namespace streamd
