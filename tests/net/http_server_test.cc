#include "server/net/http_server.h"

#include <catch2/catch.hpp>

namespace streamd {
namespace {

TEST_CASE("request lines parse into method and path without the query", "[http]") {
  auto line = parse_request_head("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  REQUIRE(line.has_value());
  CHECK(line->method == "GET");
  CHECK(line->path == "/metrics");
  CHECK_FALSE(line->bearer.has_value());
  CHECK(parse_request_head("HEAD /healthz HTTP/1.0\r\n\r\n")->path == "/healthz");
  for (const char* bad :
       {"", "GET\r\n", "GET /x\r\n", "GET  HTTP/1.1\r\n", "GET x HTTP/1.1\r\n", "GET /x SPDY/3\r\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_request_head(bad).has_value());
  }
}

TEST_CASE("a bearer token comes from the Authorization header, whatever its case", "[http]") {
  CHECK(parse_request_head("GET /metrics HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t0k3n\r\n\r\n")->bearer ==
        "t0k3n");
  CHECK(parse_request_head("GET / HTTP/1.1\r\nauthorization:   bearer  abc \r\n\r\n")->bearer == "abc");
  CHECK_FALSE(parse_request_head("GET / HTTP/1.1\r\nAuthorization: Basic YTpi\r\n\r\n")->bearer.has_value());
  CHECK_FALSE(parse_request_head("GET / HTTP/1.1\r\nX-Authorization: Bearer abc\r\n\r\n")->bearer.has_value());
}

TEST_CASE("responses carry their length and close the connection", "[http]") {
  const std::string out = format_http_response({503, "text/plain", "recovering\n", {{"Retry-After", "1"}}}, true);
  CHECK(out.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
  CHECK(out.find("Content-Length: 11\r\n") != std::string::npos);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(out.find("Retry-After: 1\r\n") != std::string::npos);
  CHECK(out.ends_with("\r\n\r\nrecovering\n"));
  CHECK(format_http_response({200, "text/plain", "ok\n", {}}, false).ends_with("\r\n\r\n"));
}

}  // namespace
}  // namespace streamd
