// Server: the protocol listeners and their connections (docs/PROTOCOL.md). It accepts on each of its
// addresses — plain TCP, and TLS (tls_listen) beside it — gives each connection a Connection, refuses
// connections past limits.max_connections (counted over all of them, handshakes included) with one
// UNAVAILABLE answer (over plain TCP) and a close, and on shutdown stops accepting and drains every
// connection.
//
// Threading: start() before the loop runs or on it; shutdown() and port() on the loop thread. The
// server must be destroyed after the loop has stopped. Asio stays out of this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <vector>

#include "server/config/config.h"
#include "server/net/listen_spec.h"
#include "server/storage/executor.h"
#include "server/storage/status.h"

namespace asio {
class io_context;
}

namespace streamd {

namespace auth {
class Authenticator;
}
class Broker;
class MetricsRegistry;

class Server {
 public:
  // Binds every address of `listen` and starts accepting. `blocking` runs the broker calls that sync
  // files, `readers` the ones that read logs (request_handler.h). `auth`, used on the loop thread, must
  // outlive the server.
  static Result<std::unique_ptr<Server>> start(asio::io_context& io, Broker& broker, Executor& blocking,
                                               Executor& readers, MetricsRegistry& metrics,
                                               const std::vector<ListenSpec>& listen, const Limits& limits,
                                               const auth::Authenticator& auth);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port bound for listen[i].
  uint16_t port(size_t i = 0) const;
  // Stops accepting; requests already read are answered (appends after their sync), later ones get
  // UNAVAILABLE, waiting reads answer at once; each connection closes when it owes nothing. `done`
  // runs on the loop when all are closed, or after `timeout` with the rest closed by force.
  void shutdown(std::chrono::milliseconds timeout, std::function<void()> done);

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamd
