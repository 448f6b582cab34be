// HttpApi's gate in-process, for what a test cannot set up with the real daemon on loopback: a
// listener that is not loopback.
#include "server/http_api/http_api.h"

#include <catch2/catch.hpp>
#include <future>

#include "server/auth/crypto.h"
#include "tests/http_api/memory_broker.h"

namespace streamd::http_api {
namespace {

HttpResponse ask(HttpApi& api, HttpRequest request) {
  std::promise<HttpResponse> answer;
  api.handle(std::move(request), [&](HttpResponse r) { answer.set_value(std::move(r)); });
  auto future = answer.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return future.get();
}

HttpRequest get(const std::string& path, bool loopback_listener, const std::string& host = "127.0.0.1:7412") {
  HttpRequest r;
  r.method = "GET";
  r.path = path;
  r.headers = {{"Host", host}};
  r.loopback_listener = loopback_listener;
  return r;
}

TEST_CASE("without an access file, nothing is served on a listener that is not loopback", "[http_api]") {
  testing::MemoryBroker b;
  ThreadPool blocking(1);
  MetricsRegistry metrics;
  auth::Authenticator open;  // no access file
  HttpApi api(*b.broker, blocking, b.scheduler, metrics, open, ApiOptions{}, std::chrono::steady_clock::now());
  for (const char* path : {"/api/v1/streams", "/ui/", "/"}) {
    INFO(path);
    auto refused = ask(api, get(path, false, "10.0.0.5:7412"));
    CHECK(refused.status == 403);
    CHECK(refused.body.find("auth.token_file") != std::string::npos);
  }
  CHECK(ask(api, get("/api/v1/streams", true)).status == 200);
  CHECK(ask(api, get("/api/v1/streams", true, "evil.example")).status == 400);
  api.stop();
}

TEST_CASE("with an access file, a listener that is not loopback serves, to principals only", "[http_api]") {
  testing::MemoryBroker b;
  ThreadPool blocking(1);
  MetricsRegistry metrics;
  auth::Authenticator secured;
  auto table = auth::AccessTable::parse("token ops sha256:" +
                                        auth::hex_encode(auth::hash(auth::Digest::kSha256, "t0k3n")) +
                                        "\ngrant ops all *\n");
  REQUIRE(table.ok());
  secured.replace(std::make_shared<const auth::AccessTable>(std::move(*table)));
  HttpApi api(*b.broker, blocking, b.scheduler, metrics, secured, ApiOptions{}, std::chrono::steady_clock::now());
  CHECK(ask(api, get("/api/v1/streams", false, "broker.example.net")).status == 401);
  HttpRequest with_token = get("/api/v1/streams", false, "broker.example.net");
  with_token.bearer = "t0k3n";
  CHECK(ask(api, with_token).status == 200);
  CHECK(ask(api, get("/ui/", false, "broker.example.net")).status == 200);
  api.stop();
}

}  // namespace
}  // namespace streamd::http_api
