#include "server/net/http_server.h"

#include <spdlog/spdlog.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <cctype>

#include "server/net/listener.h"

namespace streamd {
namespace {

constexpr size_t kMaxHeadBytes = 8192;
constexpr auto kExchangeTimeout = std::chrono::seconds(10);

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One request on one connection: read the head, answer, close.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(asio::io_context& io, std::unique_ptr<ByteStream> stream, HttpServer::Handler handler)
      : stream_(std::move(stream)), handler_(std::move(handler)), deadline_(io, kExchangeTimeout) {}

  void start() {
    std::weak_ptr<Exchange> weak = shared_from_this();
    deadline_.async_wait([weak](const std::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) self->stream_->close();  // the read then fails
    });
    read();
  }

 private:
  void read() {
    const size_t used = head_.size();
    head_.resize(kMaxHeadBytes + 1);
    stream_->read_some(head_.data() + used, head_.size() - used,
                       [self = shared_from_this(), used](const std::error_code& ec, size_t n) {
                         self->head_.resize(used + (ec ? 0 : n));
                         if (ec) return self->end();
                         if (self->head_.find("\r\n\r\n") != std::string::npos) return self->respond(false);
                         if (self->head_.size() > kMaxHeadBytes) return self->respond(true);
                         self->read();
                       });
  }

  void respond(bool too_large) {
    HttpResponse response;
    bool include_body = true;
    if (too_large) {
      response = {431, "text/plain; charset=utf-8", "request head too large\n", {}};
    } else if (auto request = parse_request_head(head_); !request) {
      response = {400, "text/plain; charset=utf-8", "bad request line\n", {}};
    } else if (request->method != "GET" && request->method != "HEAD") {
      response = {405, "text/plain; charset=utf-8", "only GET and HEAD\n", {}};
    } else {
      include_body = request->method == "GET";
      response = handler_(*request);
    }
    out_ = format_http_response(response, include_body);
    views_ = {out_};
    stream_->write(views_, [self = shared_from_this()](const std::error_code&, size_t) { self->end(); });
  }

  void end() {
    deadline_.cancel();
    stream_->close();
  }

  std::unique_ptr<ByteStream> stream_;
  HttpServer::Handler handler_;
  asio::steady_timer deadline_;
  std::string head_;
  std::string out_;
  std::vector<std::string_view> views_;
};

}  // namespace

std::optional<HttpRequest> parse_request_head(std::string_view head) {
  const size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return std::nullopt;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return std::nullopt;
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!line.substr(sp2 + 1).starts_with("HTTP/1.") || target.front() != '/') return std::nullopt;
  target = target.substr(0, target.find('?'));
  HttpRequest request{std::string(line.substr(0, sp1)), std::string(target), std::nullopt};
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view header = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos || !same_name(header.substr(0, colon), "Authorization")) continue;
    const std::string_view value = trim(header.substr(colon + 1));
    if (value.size() > 7 && same_name(value.substr(0, 7), "Bearer ")) request.bearer = std::string(trim(value.substr(7)));
  }
  return request;
}

std::string format_http_response(const HttpResponse& response, bool include_body) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason_phrase(response.status)) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (include_body) out += response.body;
  return out;
}

struct HttpServer::Impl : std::enable_shared_from_this<Impl> {
  struct Listening {
    asio::ip::tcp::acceptor acceptor;
    std::shared_ptr<TlsContext> tls;
  };

  Impl(asio::io_context& io_context, std::vector<Listening> listeners, Handler h)
      : io(io_context), listening(std::move(listeners)), handler(std::move(h)) {}

  void accept(Listening& on) {
    on.acceptor.async_accept([self = shared_from_this(), &on](const std::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !on.acceptor.is_open()) return;
      if (ec) {
        spdlog::warn("http accept failed: {}", ec.message());
        auto pause = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(100));
        pause->async_wait([self, &on, pause](const std::error_code&) { self->accept(on); });
        return;
      }
      open_stream(std::move(socket), on.tls.get(), "http_tls_listen", [self](std::unique_ptr<ByteStream> stream) {
        if (stream) std::make_shared<Exchange>(self->io, std::move(stream), self->handler)->start();
      });
      self->accept(on);
    });
  }

  asio::io_context& io;
  std::vector<Listening> listening;
  Handler handler;
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                      Handler handler) {
  std::vector<Impl::Listening> listening;
  for (const ListenSpec& spec : listen) {
    auto acceptor = open_acceptor(io, spec.at);
    if (!acceptor.ok()) return acceptor.status();
    listening.push_back(Impl::Listening{std::move(*acceptor), spec.tls});
  }
  auto impl = std::make_shared<Impl>(io, std::move(listening), std::move(handler));
  for (Impl::Listening& on : impl->listening) impl->accept(on);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
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
