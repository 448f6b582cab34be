#include "server/http_api/gate.h"

#include <catch2/catch.hpp>

namespace streamd::http_api {
namespace {

HttpRequest request(const std::string& method, std::vector<std::pair<std::string, std::string>> headers) {
  HttpRequest r;
  r.method = method;
  r.path = "/api/v1/streams";
  r.headers = std::move(headers);
  return r;
}

TEST_CASE("only this broker's names pass the Host check", "[gate]") {
  const std::vector<std::string> allowed = {"broker.example.net"};
  for (const char* ok : {"localhost", "localhost:7412", "127.0.0.1:7412", "127.3.4.5", "[::1]:7412", "LOCALHOST",
                         "broker.example.net:7412", "Broker.Example.Net"}) {
    INFO(ok);
    CHECK(host_allowed(std::string_view(ok), allowed, false));
  }
  for (const char* bad : {"evil.example.com", "127.0.0.1.evil.com", "128.0.0.1", "10.0.0.1", "[::2]", "",
                          "localhost.evil.com", "127.0.0.256"}) {
    INFO(bad);
    CHECK_FALSE(host_allowed(std::string_view(bad), allowed, false));
  }
  CHECK_FALSE(host_allowed(std::nullopt, allowed, false));
  CHECK(host_allowed(std::string_view("anything.example.org"), allowed, true));
}

TEST_CASE("a change must come from this origin as JSON", "[gate]") {
  CHECK_FALSE(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}, {"Content-Type", "application/json"}})));
  CHECK_FALSE(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"},
                                             {"Origin", "http://127.0.0.1:7412"},
                                             {"Sec-Fetch-Site", "same-origin"},
                                             {"Content-Type", "application/json; charset=utf-8"}})));
  CHECK_FALSE(refuse_change(request("DELETE", {{"Host", "127.0.0.1:7412"}})));
  CHECK(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}, {"Origin", "http://evil.example"},
                                       {"Content-Type", "application/json"}})));
  CHECK(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}, {"Origin", "null"},
                                       {"Content-Type", "application/json"}})));
  CHECK(refuse_change(request("DELETE", {{"Host", "127.0.0.1:7412"}, {"Origin", "http://127.0.0.1:9999"}})));
  CHECK(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}, {"Sec-Fetch-Site", "cross-site"},
                                       {"Content-Type", "application/json"}})));
  // A form post (text/plain, urlencoded) needs no preflight: it must be refused.
  CHECK(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}, {"Content-Type", "text/plain"}})));
  CHECK(refuse_change(request("POST", {{"Host", "127.0.0.1:7412"}})));
  HttpRequest tls = request("POST", {{"Host", "b:7414"}, {"Origin", "http://b:7414"}, {"Content-Type", "application/json"}});
  tls.tls = true;
  CHECK(refuse_change(tls));
}

TEST_CASE("every answer gets the policy headers", "[gate]") {
  HttpResponse r(200, "application/json", "{}");
  add_security_headers(r, true);
  auto has = [&](const std::string& name) {
    for (const auto& [n, v] : r.headers) {
      if (n == name) return true;
    }
    return false;
  };
  CHECK(has("Content-Security-Policy"));
  CHECK(has("X-Frame-Options"));
  CHECK(has("Strict-Transport-Security"));
  CHECK(std::string(kContentSecurityPolicy).find("unsafe") == std::string::npos);
}

}  // namespace
}  // namespace streamd::http_api
