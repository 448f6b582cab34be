#include "server/net/http_server.h"

#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "server/net/listener.h"

namespace streamd {
namespace {

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
constexpr size_t kMaxHeadBytes = 8192;
constexpr auto kExchangeTimeout = std::chrono::seconds(10);

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
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

}  // namespace

std::optional<HttpRequestLine> parse_request_line(std::string_view head) {
  const size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return std::nullopt;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return std::nullopt;
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!line.substr(sp2 + 1).starts_with("HTTP/1.") || target.front() != '/') return std::nullopt;
  target = target.substr(0, target.find('?'));
  return HttpRequestLine{std::string(line.substr(0, sp1)), std::string(target)};
}

std::string format_http_response(const HttpResponse& response, bool include_body) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason_phrase(response.status)) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (include_body) out += response.body;
  return out;
}

struct HttpServer::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io_context, asio::ip::tcp::acceptor listener, Handler h)
      : io(io_context), acceptor(std::move(listener)), handler(std::move(h)) {}

  static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self) {
    while (self->acceptor.is_open()) {
      auto [ec, socket] = co_await self->acceptor.async_accept(kAsTuple);
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) co_return;
      if (ec) {
        spdlog::warn("http accept failed: {}", ec.message());
        asio::steady_timer pause(self->io, std::chrono::milliseconds(100));
        co_await pause.async_wait(kAsTuple);
        continue;
      }
      asio::co_spawn(self->io, exchange(self, std::move(socket)), asio::detached);
    }
  }

  static asio::awaitable<void> exchange(std::shared_ptr<Impl> self, asio::ip::tcp::socket accepted) {
    // Shared with the deadline's handler, which may already be queued when the exchange ends.
    auto socket_ptr = std::make_shared<asio::ip::tcp::socket>(std::move(accepted));
    asio::ip::tcp::socket& socket = *socket_ptr;
    asio::steady_timer deadline(self->io, kExchangeTimeout);
    deadline.async_wait([socket_ptr](const std::error_code& ec) {
      if (ec) return;
      std::error_code ignored;
      socket_ptr->close(ignored);
    });
    std::string head;
    auto [ec, n] = co_await asio::async_read_until(socket, asio::dynamic_buffer(head, kMaxHeadBytes),
                                                   "\r\n\r\n", kAsTuple);
    HttpResponse response;
    bool include_body = true;
    if (ec == asio::error::not_found) {
      response = {431, "text/plain; charset=utf-8", "request head too large\n"};
    } else if (ec) {
      co_return;
    } else if (auto line = parse_request_line(head); !line) {
      response = {400, "text/plain; charset=utf-8", "bad request line\n"};
    } else if (line->method != "GET" && line->method != "HEAD") {
      response = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    } else {
      include_body = line->method == "GET";
      response = self->handler(*line);
    }
    const std::string out = format_http_response(response, include_body);
    co_await asio::async_write(socket, asio::buffer(out), kAsTuple);
    std::error_code ignored;
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    deadline.cancel();
  }

  asio::io_context& io;
  asio::ip::tcp::acceptor acceptor;
  Handler handler;
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(asio::io_context& io, const Endpoint& at,
                                                      Handler handler) {
  auto acceptor = open_acceptor(io, at);
  if (!acceptor.ok()) return acceptor.status();
  auto impl = std::make_shared<Impl>(io, std::move(*acceptor), std::move(handler));
  asio::co_spawn(io, Impl::accept_loop(impl), asio::detached);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const {
  std::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::close() {
  std::error_code ec;
  impl_->acceptor.close(ec);
}

}  // namespace streamd
