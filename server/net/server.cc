#include "server/net/server.h"

#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <unordered_map>

#include "server/net/connection.h"
#include "server/net/listener.h"
#include "server/net/tls_context.h"
#include "server/net/net_metrics.h"
#include "server/net/request_handler.h"
#include "server/net/wire_convert.h"

namespace streamd {

struct Server::Impl {
  // One address and what it speaks.
  struct Listening {
    asio::ip::tcp::acceptor acceptor;
    std::shared_ptr<TlsContext> tls;
  };

  Impl(asio::io_context& io_context, Broker& broker, Executor& blocking, Executor& readers, MetricsRegistry& registry,
       std::vector<Listening> listeners, const Limits& configured, const auth::Authenticator& authenticator)
      : io(io_context),
        listening(std::move(listeners)),
        limits(configured),
        auth(authenticator),
        metrics(registry),
        handler(io_context, broker, blocking, readers, metrics),
        shutdown_timer(io_context) {}

  static asio::awaitable<void> accept_loop(Impl* self, Listening* on);
  void admit(std::unique_ptr<ByteStream> stream, bool tls);
  void refuse(asio::ip::tcp::socket socket, bool tls);
  void on_closed(uint64_t id);

  asio::io_context& io;
  std::vector<Listening> listening;
  const Limits limits;
  const auth::Authenticator& auth;
  NetMetrics metrics;
  RequestHandler handler;
  std::unordered_map<uint64_t, std::shared_ptr<Connection>> connections;
  size_t handshaking = 0;  // TLS handshakes in progress, which hold a descriptor too
  uint64_t next_id = 1;
  static constexpr auto kRefusalLogInterval = std::chrono::seconds(10);
  uint64_t refused_unlogged = 0;
  std::chrono::steady_clock::time_point last_refusal_log;
  bool shutting_down = false;
  asio::steady_timer shutdown_timer;
  std::function<void()> shutdown_done;
};

asio::awaitable<void> Server::Impl::accept_loop(Impl* self, Listening* on) {
  constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
  while (on->acceptor.is_open()) {
    auto [ec, socket] = co_await on->acceptor.async_accept(kAsTuple);
    if (ec == asio::error::operation_aborted || !on->acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors, usually: back off briefly instead of spinning on the error.
      spdlog::warn("accept failed: {}", ec.message());
      asio::steady_timer pause(self->io, std::chrono::milliseconds(100));
      co_await pause.async_wait(kAsTuple);
      continue;
    }
    const bool tls = on->tls != nullptr;
    if (self->connections.size() + self->handshaking >= self->limits.max_connections) {
      self->refuse(std::move(socket), tls);
      continue;
    }
    self->metrics.connections_accepted.inc();
    if (tls) ++self->handshaking;
    open_stream(std::move(socket), on->tls.get(), "tls_listen", [self, tls](std::unique_ptr<ByteStream> stream) {
      if (tls) --self->handshaking;
      if (!stream) {
        self->metrics.connection_errors.inc();
        return;
      }
      if (self->shutting_down) return;  // the handshake outlived the listener; the stream closes
      self->admit(std::move(stream), tls);
    });
  }
}

void Server::Impl::admit(std::unique_ptr<ByteStream> stream, bool tls) {
  const uint64_t id = next_id++;
  Connection::Context context{handler, metrics, limits, auth, tls,
                              [this](uint64_t closed_id) { on_closed(closed_id); }};
  auto conn = std::make_shared<Connection>(io, std::move(stream), id, std::move(context));
  connections.emplace(id, conn);
  conn->start();
}

void Server::Impl::refuse(asio::ip::tcp::socket socket, bool tls) {
  metrics.connections_refused.inc();
  if (tls) {
    // An answer would need a handshake first, which is what the limit is there to spare.
    std::error_code ec;
    socket.close(ec);
    spdlog::warn("refused a TLS connection: {} connections open (limits.max_connections)", limits.max_connections);
    return;
  }
  v1::Response response;
  error_to_wire(Status(Code::kUnavailable, "The broker is at its connection limit",
                       {{"max_connections", std::to_string(limits.max_connections)}}),
                response.mutable_error());
  const std::string frame = encode_frame(response);
  // A fresh socket's send buffer takes these few bytes at once; never wait on a refused client.
  std::error_code ec;
  socket.non_blocking(true, ec);
  asio::write(socket, asio::buffer(frame), ec);
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket.close(ec);
  // One line per burst, not per refusal: a flood of connections must not become a flood of logs.
  ++refused_unlogged;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log >= kRefusalLogInterval) {
    spdlog::warn("refused {} connection(s): {} connections open (limits.max_connections); the count is in "
                 "streamd_connections_refused_total",
                 refused_unlogged, limits.max_connections);
    refused_unlogged = 0;
    last_refusal_log = now;
  }
}

void Server::Impl::on_closed(uint64_t id) {
  connections.erase(id);
  if (shutting_down && connections.empty() && shutdown_done) {
    shutdown_timer.cancel();
    auto done = std::move(shutdown_done);
    shutdown_done = nullptr;
    done();
  }
}

Result<std::unique_ptr<Server>> Server::start(asio::io_context& io, Broker& broker, Executor& blocking,
                                              Executor& readers, MetricsRegistry& metrics,
                                              const std::vector<ListenSpec>& listen, const Limits& limits,
                                              const auth::Authenticator& auth) {
  std::vector<Impl::Listening> listening;
  for (const ListenSpec& spec : listen) {
    auto acceptor = open_acceptor(io, spec.at);
    if (!acceptor.ok()) return acceptor.status();
    listening.push_back(Impl::Listening{std::move(*acceptor), spec.tls});
  }
  auto impl = std::make_unique<Impl>(io, broker, blocking, readers, metrics, std::move(listening), limits, auth);
  for (Impl::Listening& on : impl->listening) asio::co_spawn(io, Impl::accept_loop(impl.get(), &on), asio::detached);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() = default;

uint16_t Server::port(size_t i) const {
  std::error_code ec;
  return impl_->listening.at(i).acceptor.local_endpoint(ec).port();
}

void Server::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  Impl& s = *impl_;
  s.shutting_down = true;
  std::error_code ec;
  for (Impl::Listening& on : s.listening) on.acceptor.close(ec);
  if (s.connections.empty()) {
    done();
    return;
  }
  s.shutdown_done = std::move(done);
  // Copy: draining may close a connection, which erases it from the map.
  auto open = s.connections;
  for (auto& [id, conn] : open) conn->drain();
  if (s.connections.empty()) return;  // on_closed already called done
  s.shutdown_timer.expires_after(timeout);
  s.shutdown_timer.async_wait([impl = impl_.get()](const std::error_code& wait_ec) {
    if (wait_ec) return;
    spdlog::warn("shutdown: {} connections still owed answers after the timeout; closing them",
                 impl->connections.size());
    auto left = impl->connections;
    for (auto& [id, conn] : left) conn->close();
  });
}

}  // namespace streamd
