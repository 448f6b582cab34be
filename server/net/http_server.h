// HttpServer: the broker's HTTP/1.1 listener, on plain TCP (http_listen) and TLS (http_tls_listen)
// alike: the operations endpoints (/healthz, /readyz, /metrics) and the HTTP API and console
// (docs/HTTP.md §"The listener").
//
// Each connection reads one request at a time — head, then a body of Content-Length bytes — hands it
// to the handler and reads the next only once the answer is written (keep-alive; pipelined bytes
// wait in the buffer). Everything a client controls is bounded, so a slow, hostile or broken client
// costs one socket for a bounded time and nothing else: the head's size (431) and the body's (413,
// refused before it is read), the time a request may take to arrive from its first byte, an idle
// keep-alive connection's life, the time an answer may take to be read, and the connections open at
// once (past it a new one is answered 503 and closed).
//
// Threading: the server and its connections live on the loop. The handler is called there and must
// not block; it answers through its Reply, from any thread, exactly once. Asio stays out of this
// header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/net/http_message.h"
#include "server/net/listen_spec.h"
#include "server/storage/status.h"

namespace asio {
class io_context;
}

namespace streamd {

class Gauge;

struct HttpServerOptions {
  size_t max_head_bytes = 16 << 10;
  uint64_t max_body_bytes = 4 << 20;
  // From a request's first byte to its last.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  // A keep-alive connection with no request in progress.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // Writing one answer (or one chunk of a streamed one) to a client that does not read.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  uint32_t max_connections = 512;
  Gauge* connections = nullptr;  // when set, kept at the number of connections open
};

class HttpServer {
 public:
  // Sends the answer; from any thread, once per request.
  using Reply = std::function<void(HttpResponse response)>;
  using Handler = std::function<void(HttpRequest request, Reply reply)>;
  // The operations endpoints' shape: the answer at once, on the loop.
  using SyncHandler = std::function<HttpResponse(const HttpRequest& request)>;

  static Result<std::unique_ptr<HttpServer>> start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                   Handler handler, HttpServerOptions options = {});
  static Result<std::unique_ptr<HttpServer>> start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                   SyncHandler handler, HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port bound for listen[i].
  uint16_t port(size_t i = 0) const;
  // Stops accepting; exchanges in progress finish on their own.
  void close();

 private:
  struct Impl;
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Whether a configured listen host is a loopback one (127.0.0.0/8, ::1, "localhost").
bool is_loopback_host(const std::string& host);

}  // namespace streamd
