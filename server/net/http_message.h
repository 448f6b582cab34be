// HTTP/1.1 messages as the broker's HTTP listener reads and writes them (docs/HTTP.md §"The
// listener"): the request head parsed into method, path, query and headers; the response formatted
// with its length (or chunked, for a streamed body) and the headers every answer carries.
//
// The parser is strict where leniency would be a smuggling or confusion risk: no Transfer-Encoding
// on requests (411/501: a body must say its length), one Content-Length of digits only, header names
// of token characters, no obsolete line folding. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace streamd {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string path;   // the target without the query string, as sent (not percent-decoded)
  std::string query;  // after '?', as sent; empty without one
  HttpHeaders headers;
  std::optional<std::string> bearer;  // the token of "Authorization: Bearer TOKEN"
  std::string body;
  bool keep_alive = true;  // HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive"
  // Filled by the server, not the parser: the connection's transport and listener.
  bool tls = false;
  bool loopback_listener = true;  // the listener's own address is a loopback one
  std::string peer;               // "address:port", for logs

  // The first header of that name (any case), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
};

// A body produced in pieces after the head is sent (Transfer-Encoding: chunked), for answers too big
// to hold at once (an export). The server asks for the next piece only once the previous one is
// written, so a slow reader slows the source instead of filling memory. Destroyed when the
// connection closes, whether or not the body was finished.
class HttpBodySource {
 public:
  // chunk: the next bytes (may be empty); last: no more after these. Callable from any thread, once.
  using Deliver = std::function<void(std::string chunk, bool last)>;
  virtual ~HttpBodySource() = default;
  virtual void next(Deliver deliver) = 0;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string text, HttpHeaders extra = {})
      : status(status_code), content_type(std::move(type)), body(std::move(text)), headers(std::move(extra)) {}

  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  HttpHeaders headers;  // beyond the ones every answer has
  std::shared_ptr<HttpBodySource> stream;  // set: the body comes from it, chunked; `body` is ignored
};

// What a request head amounts to: a request, or the status to refuse it with (and why).
struct HeadParse {
  std::optional<HttpRequest> request;
  int status = 400;     // when there is no request
  std::string problem;  // when there is no request: a sentence for the answer's body
  uint64_t content_length = 0;
};

// Parses "GET /path?query HTTP/1.1" and the headers after it (the head without its final blank line
// is enough). Refuses a malformed line or header (400), a Transfer-Encoding (501) and a bad or
// repeated Content-Length (400).
HeadParse parse_head(std::string_view head);
// The request, or nullopt when parse_head() refuses the head.
std::optional<HttpRequest> parse_request_head(std::string_view head);

std::string_view reason_phrase(int status);
// The status line and headers: Content-Length (or Transfer-Encoding: chunked with a stream),
// Connection, and the hygiene headers of docs/HTTP.md §"Headers on every answer". With
// include_body, the body follows (not for HEAD, nor for a stream, whose chunks the server writes).
std::string format_http_response(const HttpResponse& response, bool include_body, bool keep_alive = false);
// One chunk of a chunked body; an empty `bytes` is the final chunk.
std::string format_chunk(std::string_view bytes);

// Case-insensitive ASCII comparison, as header names compare.
bool same_header_name(std::string_view a, std::string_view b);

}  // namespace streamd
