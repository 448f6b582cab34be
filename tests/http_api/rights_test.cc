// The API with an access file: who may do what (the native protocol's rights, docs/SECURITY.md),
// console logins with a SCRAM password or a token, session cookies, and the gate's Host and Origin
// checks.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "server/auth/crypto.h"
#include "server/auth/scram.h"
#include "server/http_api/json.h"
#include "tests/http_api/http_client.h"
#include "tests/support/temp_dir.h"

namespace streamd::testing {
namespace {

std::string token_line(const std::string& name, const std::string& token) {
  return "token " + name + " sha256:" + auth::hex_encode(auth::hash(auth::Digest::kSha256, token)) + "\n";
}

std::string scram_line(const std::string& name, const std::string& password) {
  const auto c = auth::make_scram_credential(auth::ScramMechanism::kSha256, password, "salt-of-16-bytes", 4096);
  return "scram " + name + " SCRAM-SHA-256 4096 " + auth::base64_encode(c.salt) + " " +
         auth::base64_encode(c.stored_key) + " " + auth::base64_encode(c.server_key) + "\n";
}

// admin: all on *; writer: read,write on orders.*; reader: read on *; stranger: nothing.
struct Secured {
  Secured() {
    const std::string file = dir.file("access");
    std::ofstream(file) << token_line("admin", "admin-token") << token_line("writer", "writer-token")
                        << token_line("reader", "reader-token") << scram_line("reader", "reader password")
                        << token_line("stranger", "stranger-token") << "grant admin all *\n"
                        << "grant writer read,write orders.*\ngrant reader read *\n";
    ::chmod(file.c_str(), 0600);
    daemon = std::make_unique<DaemonProcess>(std::vector<std::string>{"--auth.token-file", file});
    REQUIRE(daemon->start());
  }
  HttpClient as(const std::string& token) {
    HttpClient c(daemon->http_port());
    if (!token.empty()) c.defaults["Authorization"] = "Bearer " + token;
    return c;
  }
  TempDir dir;
  std::unique_ptr<DaemonProcess> daemon;
};

std::string rights_error(const HttpAnswer& a) {
  auto v = http_api::parse_json(a.body);
  if (!v.ok() || v->get("error") == nullptr) return "(none)";
  return v->get("error")->get("name")->text();
}

TEST_CASE("every operation takes the right the native protocol takes", "[http_api][rights]") {
  Secured s;
  HttpClient admin = s.as("admin-token");
  REQUIRE(admin.post("/api/v1/streams", R"({"name":"orders.eu","policy":{"partitions":1}})").status == 201);
  REQUIRE(admin.post("/api/v1/streams", R"({"name":"audit"})").status == 201);
  REQUIRE(admin.post("/api/v1/streams/orders.eu/records", R"({"records":[{"payload":"x"}]})").status == 200);

  struct Case {
    const char* method;
    const char* path;
    const char* body;
    // Expected status for admin, writer, reader, stranger.
    int admin, writer, reader, stranger;
  };
  const Case cases[] = {
      {"GET", "/api/v1/streams/orders.eu", "", 200, 200, 200, 403},
      {"GET", "/api/v1/streams/audit", "", 200, 403, 200, 403},
      {"GET", "/api/v1/streams/orders.eu/records?from=earliest", "", 200, 200, 200, 403},
      {"GET", "/api/v1/streams/audit/records", "", 200, 403, 200, 403},
      {"POST", "/api/v1/streams/orders.eu/records", R"({"records":[{"payload":"y"}]})", 200, 200, 403, 403},
      {"POST", "/api/v1/streams/audit/records", R"({"records":[{"payload":"y"}]})", 200, 403, 403, 403},
      {"GET", "/api/v1/streams/orders.eu/groups", "", 200, 200, 200, 403},
      {"POST", "/api/v1/streams/orders.eu/groups/g/commit", R"({"partition":0,"next":1})", 200, 200, 200, 403},
      {"POST", "/api/v1/streams/orders.eu/search", R"({"query":"x"})", 202, 202, 202, 403},
      {"GET", "/api/v1/streams/orders.eu/export", "", 200, 200, 200, 403},
      {"POST", "/api/v1/streams/orders.eu/partitions/0/trim", R"({"before":0})", 200, 403, 403, 403},
      {"POST", "/api/v1/streams/orders.eu/partitions/0/compact", "{}", 200, 403, 403, 403},
      {"POST", "/api/v1/streams", R"({"name":"orders.new"})", 201, 403, 403, 403},
      {"GET", "/api/v1/overview", "", 200, 403, 200, 403},
      {"GET", "/api/v1/health", "", 200, 200, 200, 200},
  };
  const char* tokens[] = {"admin-token", "writer-token", "reader-token", "stranger-token"};
  for (const Case& k : cases) {
    const int expected[] = {k.admin, k.writer, k.reader, k.stranger};
    for (int who = 0; who < 4; ++who) {
      INFO(k.method << " " << k.path << " as " << tokens[who]);
      HttpClient c = s.as(tokens[who]);
      auto a = c.request(k.method, k.path, k.body, {{"Content-Type", "application/json"}});
      CHECK(a.status == expected[who]);
      if (a.status == 403) {
        CHECK(rights_error(a) == "PERMISSION_DENIED");
        auto v = http_api::parse_json(a.body);
        REQUIRE(v.ok());
        CHECK(v->get("error")->get("fields")->get("principal")->text() == std::string(tokens[who]).substr(0, std::string(tokens[who]).find('-')));
      }
    }
  }
  // A listing shows only what the principal may read.
  const auto listing = s.as("writer-token").get("/api/v1/streams");
  INFO(listing.body);
  auto listed = http_api::parse_json(listing.body);
  REQUIRE(listed.ok());
  CHECK(listed->u64_of("total") == 2);  // orders.eu and orders.new, not audit
  // A search is seen and cancelled only by the principal that started it.
  auto started = http_api::parse_json(
      s.as("writer-token").post("/api/v1/streams/orders.eu/search", R"({"query":"y"})").body);
  REQUIRE(started.ok());
  const std::string search = "/api/v1/searches/" + started->get("id")->text();
  CHECK(s.as("writer-token").get(search).status == 200);
  CHECK(s.as("reader-token").get(search).status == 404);
  CHECK(s.as("reader-token").del(search).status == 404);
  CHECK(s.as("admin-token").del("/api/v1/streams/audit").status == 200);
  CHECK(s.as("reader-token").del("/api/v1/streams/orders.eu").status == 403);
}

TEST_CASE("without credentials, or with a bad token, the API answers UNAUTHENTICATED", "[http_api][rights]") {
  Secured s;
  auto none = s.as("").get("/api/v1/streams");
  CHECK(none.status == 401);
  CHECK(rights_error(none) == "UNAUTHENTICATED");
  CHECK(none.header("WWW-Authenticate").find("Bearer") == 0);
  CHECK(s.as("wrong").get("/api/v1/streams").status == 401);
  // The static files carry no data: the login page must load without a login.
  CHECK(s.as("").get("/ui/").status == 200);
  auto session = http_api::parse_json(s.as("").get("/api/v1/session").body);
  REQUIRE(session.ok());
  CHECK(session->get("auth_required")->boolean());
  CHECK_FALSE(session->get("authenticated")->boolean());
}

TEST_CASE("a console login with a SCRAM password gives an HttpOnly, SameSite=Strict session", "[http_api][rights]") {
  Secured s;
  HttpClient c = s.as("");
  auto wrong = c.post("/api/v1/session", R"({"user":"reader","password":"guess"})");
  CHECK(wrong.status == 401);
  CHECK(wrong.header("Set-Cookie").empty());
  CHECK(c.post("/api/v1/session", R"({"user":"nobody","password":"guess"})").status == 401);
  auto ok = c.post("/api/v1/session", R"({"user":"reader","password":"reader password"})");
  REQUIRE(ok.status == 200);
  const std::string cookie = ok.header("Set-Cookie");
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  CHECK(cookie.find("SameSite=Strict") != std::string::npos);
  CHECK(cookie.find("Path=/") != std::string::npos);
  const std::string value = cookie.substr(0, cookie.find(';'));
  c.defaults["Cookie"] = value;
  auto me = http_api::parse_json(c.get("/api/v1/session").body);
  REQUIRE(me.ok());
  CHECK(me->get("principal")->text() == "reader");
  CHECK_FALSE(me->get("anywhere")->get("write")->boolean());
  CHECK(c.get("/api/v1/streams").status == 200);
  CHECK(c.post("/api/v1/streams", R"({"name":"nope"})").status == 403);  // read-only
  // Logging out ends the session on the broker, not only in the browser.
  CHECK(c.del("/api/v1/session").status == 200);
  CHECK(c.get("/api/v1/streams").status == 401);
  // A token logs in too.
  HttpClient t = s.as("");
  auto by_token = t.post("/api/v1/session", R"({"token":"admin-token"})");
  REQUIRE(by_token.status == 200);
  t.defaults["Cookie"] = by_token.header("Set-Cookie").substr(0, by_token.header("Set-Cookie").find(';'));
  CHECK(t.post("/api/v1/streams", R"({"name":"made.by.session"})").status == 201);
}

TEST_CASE("changes from another origin, as a form, or for another host are refused", "[http_api][rights]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  HttpClient c(daemon.http_port());
  const std::string host = "127.0.0.1:" + std::to_string(daemon.http_port());
  auto foreign = c.request("POST", "/api/v1/streams", R"({"name":"x"})",
                           {{"Content-Type", "application/json"}, {"Origin", "http://evil.example"}});
  CHECK(foreign.status == 403);
  CHECK(rights_error(foreign) == "PERMISSION_DENIED");
  CHECK(c.request("POST", "/api/v1/streams", R"({"name":"x"})", {{"Content-Type", "text/plain"}}).status == 403);
  CHECK(c.request("DELETE", "/api/v1/streams/x", "", {{"Sec-Fetch-Site", "cross-site"}}).status == 403);
  auto same = c.request("POST", "/api/v1/streams", R"({"name":"x"})",
                        {{"Content-Type", "application/json"}, {"Origin", "http://" + host}, {"Sec-Fetch-Site", "same-origin"}});
  CHECK(same.status == 201);
  // DNS rebinding: a page on evil.example whose name now points here.
  auto rebound = c.raw("GET /api/v1/streams HTTP/1.1\r\nHost: evil.example:" + std::to_string(daemon.http_port()) + "\r\n\r\n");
  CHECK(rebound.status == 400);
  CHECK(c.raw("GET /api/v1/streams HTTP/1.1\r\nHost: localhost\r\n\r\n").status == 200);
  // The stream was made once, by the same-origin request only.
  auto listed = http_api::parse_json(c.get("/api/v1/streams").body);
  REQUIRE(listed.ok());
  CHECK(listed->u64_of("total") == 1);
}

}  // namespace
}  // namespace streamd::testing
