// Tests of server/auth/scram.cc: RFC 7677's SCRAM-SHA-256 exchange replayed byte for byte, a
// SCRAM-SHA-512 login driven by a client written from RFC 5802's formulas, and every refusal.
#include "server/auth/scram.h"

#include <catch2/catch.hpp>

namespace streamd::auth {
namespace {

const std::string kSalt = *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");

ScramServer::Lookup only(std::string user, ScramCredential credential) {
  return [user = std::move(user), credential = std::move(credential)](std::string_view name) {
    return name == user ? std::optional<ScramCredential>(credential) : std::nullopt;
  };
}

TEST_CASE("the exchange of RFC 7677 section 3, replayed", "[scram]") {
  const ScramCredential c = make_scram_credential(ScramMechanism::kSha256, "pencil", kSalt, 4096);
  ScramServer server(ScramMechanism::kSha256, only("user", c), "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  auto first = server.step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  REQUIRE(first.state == ScramServer::State::kContinue);
  CHECK(first.reply == "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
  auto final = server.step(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  REQUIRE(final.state == ScramServer::State::kDone);
  CHECK(final.reply == "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  CHECK(server.user() == "user");
  CHECK(server.step("anything").state == ScramServer::State::kFailed);
}

// The client's side, from RFC 5802 §3: its final message for `password` after `server_first`. The
// final message's nonce is the combined one, with `nonce_prefix` in front (librdkafka's client nonce).
std::string client_final(ScramMechanism m, std::string_view password, const std::string& client_first_bare,
                         const std::string& server_first, const std::string& nonce_prefix = {}) {
  const Digest d = scram_digest(m);
  const std::string nonce = nonce_prefix + server_first.substr(2, server_first.find(',') - 2);
  const size_t s_at = server_first.find(",s=") + 3;
  const size_t i_at = server_first.find(",i=");
  const std::string salt = *base64_decode(server_first.substr(s_at, i_at - s_at));
  const auto iterations = static_cast<uint32_t>(std::stoul(server_first.substr(i_at + 3)));
  const std::string salted = pbkdf2(d, password, salt, iterations);
  const std::string client_key = hmac(d, salted, "Client Key");
  const std::string without_proof = "c=biws,r=" + nonce;
  const std::string auth_message = client_first_bare + "," + server_first + "," + without_proof;
  std::string proof = client_key;
  const std::string signature = hmac(d, hash(d, client_key), auth_message);
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(proof[i] ^ signature[i]);
  return without_proof + ",p=" + base64_encode(proof);
}

TEST_CASE("a SCRAM-SHA-512 login succeeds with the password and fails with any other", "[scram]") {
  const ScramCredential c = make_scram_credential(ScramMechanism::kSha512, "s3cret", "saltsalt", 4096);
  for (const char* password : {"s3cret", "s3creT", ""}) {
    INFO(password);
    ScramServer server(ScramMechanism::kSha512, only("alice", c));
    auto first = server.step("n,,n=alice,r=abc123");
    REQUIRE(first.state == ScramServer::State::kContinue);
    auto final = server.step(client_final(ScramMechanism::kSha512, password, "n=alice,r=abc123", first.reply));
    CHECK((final.state == ScramServer::State::kDone) == (std::string(password) == "s3cret"));
  }
}

TEST_CASE("an unknown user gets a salt as a known one does, and fails at the proof", "[scram]") {
  ScramServer a(ScramMechanism::kSha256, only("alice", make_scram_credential(ScramMechanism::kSha256, "pw", "s", 4096)));
  ScramServer b(ScramMechanism::kSha256, only("alice", make_scram_credential(ScramMechanism::kSha256, "pw", "s", 4096)));
  auto first_a = a.step("n,,n=mallory,r=n1");
  auto first_b = b.step("n,,n=mallory,r=n1");
  REQUIRE(first_a.state == ScramServer::State::kContinue);
  // The same name always gets the same salt, so asking twice tells nothing.
  CHECK(first_a.reply.substr(first_a.reply.find(",s=")) == first_b.reply.substr(first_b.reply.find(",s=")));
  auto final = a.step(client_final(ScramMechanism::kSha256, "pw", "n=mallory,r=n1", first_a.reply));
  CHECK(final.state == ScramServer::State::kFailed);
  CHECK(final.reason == "invalid credentials");
}

TEST_CASE("a credential of the other mechanism does not log in", "[scram]") {
  ScramServer server(ScramMechanism::kSha256,
                     only("alice", make_scram_credential(ScramMechanism::kSha512, "pw", "s", 4096)));
  auto first = server.step("n,,n=alice,r=n1");
  auto final = server.step(client_final(ScramMechanism::kSha256, "pw", "n=alice,r=n1", first.reply));
  CHECK(final.state == ScramServer::State::kFailed);
}

TEST_CASE("librdkafka's final nonce, its own nonce before the combined one, logs in, other prefixes do not",
          "[scram]") {
  const ScramCredential c = make_scram_credential(ScramMechanism::kSha256, "pw", "saltsalt", 4096);
  for (const char* prefix : {"abc123", "abc12", "xyz", "abc123abc123"}) {
    INFO(prefix);
    ScramServer server(ScramMechanism::kSha256, only("alice", c));
    auto first = server.step("n,,n=alice,r=abc123");
    REQUIRE(first.state == ScramServer::State::kContinue);
    auto final = server.step(client_final(ScramMechanism::kSha256, "pw", "n=alice,r=abc123", first.reply, prefix));
    CHECK((final.state == ScramServer::State::kDone) == (std::string(prefix) == "abc123"));
  }
}

TEST_CASE("malformed or unsupported SCRAM messages are refused", "[scram]") {
  const auto lookup = only("user", make_scram_credential(ScramMechanism::kSha256, "pencil", kSalt, 4096));
  for (const char* bad : {"", "p=tls-unique,,n=user,r=x", "x,,n=user,r=x", "n,,r=x", "n,,n=user", "n,,n=user,r=",
                          "n,,n=us=er,r=x", "n,a=other,n=user,r=x", "n,,n=user,r=x,m=ext", "n,,n=user,r=x,tokenauth=true"}) {
    INFO(bad);
    ScramServer server(ScramMechanism::kSha256, lookup);
    CHECK(server.step(bad).state == ScramServer::State::kFailed);
  }
  ScramServer server(ScramMechanism::kSha256, lookup, "SN");
  REQUIRE(server.step("n,,n=user,r=CN").state == ScramServer::State::kContinue);
  // A final message whose nonce or binding is not the exchange's.
  CHECK(server.step("c=biws,r=CNXX,p=AAAA").state == ScramServer::State::kFailed);
  ScramServer again(ScramMechanism::kSha256, lookup, "SN");
  REQUIRE(again.step("n,,n=user,r=CN").state == ScramServer::State::kContinue);
  CHECK(again.step("c=eSws,r=CNSN,p=AAAA").state == ScramServer::State::kFailed);
}

TEST_CASE("escaped user names decode", "[scram]") {
  ScramServer server(ScramMechanism::kSha256,
                     only("a,b=c", make_scram_credential(ScramMechanism::kSha256, "pw", "s", 4096)));
  REQUIRE(server.step("n,,n=a=2Cb=3Dc,r=x").state == ScramServer::State::kContinue);
  CHECK(server.user() == "a,b=c");
}

}  // namespace
}  // namespace streamd::auth
