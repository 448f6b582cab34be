// Tests of server/auth/authenticator.cc: resolving tokens, certificates and SASL logins, and what a
// reload does to proofs already made.
#include "server/auth/authenticator.h"

#include <catch2/catch.hpp>

#include "server/auth/crypto.h"

namespace streamd::auth {
namespace {

std::shared_ptr<const AccessTable> table_of(const std::string& text) {
  auto t = AccessTable::parse(text);
  REQUIRE(t.ok());
  return std::make_shared<const AccessTable>(std::move(*t));
}

std::string token_line(const std::string& name, const std::string& token) {
  return "token " + name + " sha256:" + hex_encode(hash(Digest::kSha256, token)) + "\n";
}

TEST_CASE("without an access file everyone is unrestricted, each replace starts a generation",
          "[authenticator]") {
  Authenticator auth;
  CHECK_FALSE(auth.enabled());
  CHECK_FALSE(auth.resolve(Proof())->restricted());
  CHECK_FALSE(auth.resolve(Proof::token("anything"))->restricted());
  CHECK_FALSE(auth.check_plain("u", "p").has_value());
  const uint64_t before = auth.generation();
  auth.replace(table_of(token_line("r", "tok") + "grant r read *\n"));
  CHECK(auth.enabled());
  CHECK(auth.generation() == before + 1);
  CHECK(auth.resolve(Proof::token("tok"))->name() == "r");
  CHECK_FALSE(auth.resolve(Proof::token("nope")).has_value());
  CHECK(auth.resolve(Proof())->anonymous());
  CHECK(auth.resolve(Proof::certificate("CN=x"))->name() == "CN=x");
}

TEST_CASE("a reload re-resolves proofs: a removed token or changed login credential stops working", "[authenticator]") {
  Authenticator auth;
  auth.replace(table_of(token_line("app", "old") + "grant app read a\n"));
  const Proof token = Proof::token("old");
  auto plain = auth.check_plain("app", "old");
  REQUIRE(plain.has_value());
  CHECK_FALSE(auth.check_plain("app", "wrong").has_value());
  CHECK_FALSE(auth.check_plain("ghost", "old").has_value());
  CHECK(auth.resolve(*plain)->allows(Right::kRead, "a"));

  // New grants, same token: both proofs keep working, with the new rights.
  auth.replace(table_of(token_line("app", "old") + "grant app read a b\n"));
  CHECK(auth.resolve(token)->allows(Right::kRead, "b"));
  CHECK(auth.resolve(*plain)->allows(Right::kRead, "b"));

  // The token rotated: neither resolves any more.
  auth.replace(table_of(token_line("app", "new") + "grant app read a b\n"));
  CHECK_FALSE(auth.resolve(token).has_value());
  CHECK_FALSE(auth.resolve(*plain).has_value());
}

TEST_CASE("SCRAM credentials are found by user and mechanism", "[authenticator]") {
  const ScramCredential c = make_scram_credential(ScramMechanism::kSha512, "pw", "salt", 4096);
  Authenticator auth;
  auth.replace(table_of("scram u SCRAM-SHA-512 4096 " + base64_encode(c.salt) + " " + base64_encode(c.stored_key) +
                        " " + base64_encode(c.server_key) + "\ngrant u read x\n"));
  CHECK(auth.scram("u", ScramMechanism::kSha512)->stored_key == c.stored_key);
  CHECK_FALSE(auth.scram("u", ScramMechanism::kSha256).has_value());
  Proof proof;
  proof.kind = Proof::Kind::kSasl;
  proof.name = "u";
  proof.credential = c.stored_key;
  CHECK(auth.resolve(proof)->allows(Right::kRead, "x"));
  proof.credential = "something else";
  CHECK_FALSE(auth.resolve(proof).has_value());
}

}  // namespace
}  // namespace streamd::auth
