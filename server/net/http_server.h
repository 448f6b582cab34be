// HttpServer: a small HTTP/1.1 responder for operations endpoints (/healthz, /readyz, /metrics), on
// plain TCP (http_listen) and TLS (http_tls_listen) alike.
//
// One request per connection (answered with Connection: close); only the request line and an
// Authorization header matter. The request head is capped at 8 KiB and 10 seconds, so a slow or
// hostile client costs one socket and nothing else. Runs on the network loop; the handler is called
// there and must not block. Asio stays out of this header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/net/listen_spec.h"
#include "server/storage/status.h"

namespace asio {
class io_context;
}

namespace streamd {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the ones every answer has
};

struct HttpRequest {
  std::string method;
  std::string path;                   // without the query string
  std::optional<std::string> bearer;  // the token of "Authorization: Bearer TOKEN"
};

// Parses "GET /path?query HTTP/1.1" and the headers after it; nullopt when the first line is not a
// request line.
std::optional<HttpRequest> parse_request_head(std::string_view head);
// The whole response: status line, headers (Content-Length, Connection: close) and body (not for HEAD).
std::string format_http_response(const HttpResponse& response, bool include_body);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest& request)>;

  static Result<std::unique_ptr<HttpServer>> start(asio::io_context& io, const std::vector<ListenSpec>& listen,
                                                   Handler handler);
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

}  // namespace streamd
