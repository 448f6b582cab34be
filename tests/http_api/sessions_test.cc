#include "server/http_api/sessions.h"

#include <catch2/catch.hpp>

#include "server/auth/crypto.h"
#include "server/auth/scram.h"

namespace streamd::http_api {
namespace {

std::string scram_line(const std::string& user, auth::ScramMechanism m, const std::string& password) {
  const auth::ScramCredential c = auth::make_scram_credential(m, password, "0123456789abcdef", 4096);
  return "scram " + user + " " + std::string(auth::scram_mechanism_name(m)) + " 4096 " + auth::base64_encode(c.salt) +
         " " + auth::base64_encode(c.stored_key) + " " + auth::base64_encode(c.server_key) + "\n";
}

auth::AccessTable table() {
  const std::string text =
      scram_line("ana", auth::ScramMechanism::kSha256, "correct horse") +
      scram_line("ana", auth::ScramMechanism::kSha512, "correct horse") +
      "token bob sha256:" + auth::hex_encode(auth::hash(auth::Digest::kSha256, "bob-token")) + "\n" +
      "grant ana read *\ngrant bob all *\n";
  auto t = auth::AccessTable::parse(text);
  REQUIRE(t.ok());
  return std::move(*t);
}

TEST_CASE("a console login checks the password against the SCRAM credential", "[sessions]") {
  const auth::AccessTable t = table();
  auto ok = check_password(t, "ana", "correct horse");
  REQUIRE(ok.has_value());
  CHECK(ok->name == "ana");
  CHECK(ok->kind == auth::Proof::Kind::kSasl);
  CHECK_FALSE(check_password(t, "ana", "wrong horse"));
  CHECK_FALSE(check_password(t, "nobody", "correct horse"));
  // A user with a token only logs in with the token as the password, as SASL PLAIN does.
  CHECK(check_password(t, "bob", "bob-token").has_value());
  CHECK_FALSE(check_password(t, "bob", "bob"));
  // The proof resolves to the principal under the table it was made against.
  auth::Authenticator a;
  a.replace(std::make_shared<const auth::AccessTable>(table()));
  auto principal = a.resolve(*ok);
  REQUIRE(principal.has_value());
  CHECK(principal->allows(auth::Right::kRead, "anything"));
  CHECK_FALSE(principal->allows(auth::Right::kWrite, "anything"));
}

TEST_CASE("sessions end when idle, when old, and when removed", "[sessions]") {
  SessionStore store;
  const auto t0 = SessionStore::Clock::now();
  auth::Proof proof = auth::Proof::token("x");
  const std::string id = store.create(proof, t0);
  CHECK(id.size() == 64);
  CHECK(store.find(id, t0 + std::chrono::minutes(30)).has_value());
  CHECK(store.find(id, t0 + std::chrono::minutes(80)).has_value());  // used at 30 min: idle since
  CHECK_FALSE(store.find(id, t0 + std::chrono::minutes(200)).has_value());
  const std::string other = store.create(proof, t0);
  store.remove(other);
  CHECK_FALSE(store.find(other, t0).has_value());
  CHECK_FALSE(store.find("not-a-session", t0).has_value());
}

TEST_CASE("the session cookie is found among others", "[sessions]") {
  CHECK(cookie_value("a=1; streamd_session=abc; b=2", kSessionCookie) == "abc");
  CHECK(cookie_value("streamd_session=x", kSessionCookie) == "x");
  CHECK_FALSE(cookie_value("xstreamd_session=abc", kSessionCookie).has_value());
  CHECK_FALSE(cookie_value("", kSessionCookie).has_value());
}

}  // namespace
}  // namespace streamd::http_api
