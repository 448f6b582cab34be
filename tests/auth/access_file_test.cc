// Tests of server/auth/access_file.cc: the access file's statements, the format from before digests,
// every refusal naming its line, and the file's permissions.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "server/auth/access_table.h"
#include "server/auth/crypto.h"
#include "tests/support/temp_dir.h"

namespace streamd::auth {
namespace {

std::string reason_of(const Status& s) {
  auto it = s.fields().find("reason");
  return it == s.fields().end() ? "" : it->second;
}

std::string digest_line(const std::string& name, const std::string& token) {
  return "token " + name + " sha256:" + hex_encode(hash(Digest::kSha256, token)) + "\n";
}

std::string scram_line(const std::string& name, ScramMechanism m, const std::string& password) {
  const ScramCredential c = make_scram_credential(m, password, "0123456789abcdef", 4096);
  return "scram " + name + " " + std::string(scram_mechanism_name(m)) + " 4096 " + base64_encode(c.salt) + " " +
         base64_encode(c.stored_key) + " " + base64_encode(c.server_key) + "\n";
}

TEST_CASE("token, scram and grant lines define principals and what they may do", "[access]") {
  auto table = AccessTable::parse("# principals\n\n" + digest_line("billing", "tok-b") +
                                  scram_line("billing", ScramMechanism::kSha256, "tok-b") +
                                  "grant billing read,write orders.* invoices\n"
                                  "grant \"CN=ops admin,O=Example\" all *\n");
  REQUIRE(table.ok());
  CHECK(table->size() == 2);
  const PrincipalEntry* billing = table->find_token("tok-b");
  REQUIRE(billing != nullptr);
  CHECK(billing->name == "billing");
  CHECK(billing->grants.size() == 2);
  CHECK(billing->grants[0].rights == (Rights(Right::kRead) | Right::kWrite));
  CHECK(billing->grants[1].pattern.str() == "invoices");
  CHECK(table->find_token("tok-c") == nullptr);
  CHECK(table->scram("billing", ScramMechanism::kSha256).has_value());
  CHECK_FALSE(table->scram("billing", ScramMechanism::kSha512).has_value());
  const PrincipalEntry* ops = table->find("CN=ops admin,O=Example");
  REQUIRE(ops != nullptr);
  CHECK(ops->token_digest.empty());
  CHECK(table->clear_text_tokens() == 0);
}

TEST_CASE("the format from before digests still loads, with that access on every stream", "[access]") {
  auto table = AccessTable::parse("admin  root-token\nwrite\tproducer-1\r\n  read reader\n");
  REQUIRE(table.ok());
  CHECK(table->clear_text_tokens() == 3);
  CHECK(table->find_token("root-token")->grants[0].rights == Rights::all());
  CHECK(table->find_token("producer-1")->grants[0].rights == (Rights(Right::kRead) | Right::kWrite));
  const PrincipalEntry* reader = table->find_token("reader");
  REQUIRE(reader != nullptr);
  CHECK(reader->grants[0].rights == Rights(Right::kRead));
  CHECK(reader->grants[0].pattern.covers_all());
  // Named for its line: a token is never a principal's name.
  CHECK(reader->name == "line-3");
  CHECK(reader->token_digest == hash(Digest::kSha256, "reader"));
  CHECK(table->find_token("reade") == nullptr);
  CHECK(table->find_token("reader ") == nullptr);
  CHECK(table->find_token("") == nullptr);
}

TEST_CASE("a bad access file is refused naming the line", "[access]") {
  struct Case {
    std::string text;
    const char* line;
    const char* reason;  // the start of it
  };
  const std::string digest = "sha256:" + std::string(64, 'a');
  const Case cases[] = {
      {"owner tok\n", "1", "expected token, scram or grant"},
      {"read a\nwrite\n", "2", "no token after the access level"},
      {"read a\nadmin a\n", "2", "the token appears twice"},
      {"read a b\n", "1", "more than an access level and a token"},
      {"  read reader # not a comment\n", "1", "more than an access level and a token"},
      {"token a\n", "1", "expected: token NAME"},
      {"token a md5:00\n", "1", "expected the token's digest"},
      {"token a sha256:abc\n", "1", "expected the token's digest"},
      {"token a " + digest + "\ntoken a sha256:" + std::string(64, 'b') + "\n", "2", "a second token line"},
      {"token a " + digest + "\ntoken b " + digest + "\n", "2", "the token appears twice"},
      {"token a,b " + digest + "\n", "1", "a principal is"},
      {"scram a SCRAM-SHA-1 4096 c2FsdA== AA== AA==\n", "1", "the mechanism"},
      {"scram a SCRAM-SHA-256 100 c2FsdA== AA== AA==\n", "1", "the iteration count"},
      {"scram a SCRAM-SHA-256 4096 c2FsdA== AA== AA==\n", "1", "the salt and both keys"},
      {"grant a read\n", "1", "expected: grant"},
      {"token a " + digest + "\ngrant a read,,write x\n", "2", "the rights"},
      {"token a " + digest + "\ngrant a sudo x\n", "2", "the rights"},
      {"token a " + digest + "\ngrant a read x/y\n", "2", "\"x/y\" is no stream pattern"},
      {"grant nobody read x\n", "1", "the grant names \"nobody\""},
      {"grant \"CN=unterminated read x\n", "1", "an unterminated quote"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto table = AccessTable::parse(c.text);
    REQUIRE_FALSE(table.ok());
    CHECK(table.status().code() == Code::kStreamMisconfigured);
    CHECK(table.status().fields().at("field") == "auth.token_file");
    CHECK(table.status().fields().at("line") == c.line);
    CHECK(reason_of(table.status()).starts_with(c.reason));
  }
  auto empty = AccessTable::parse("# nothing yet\n");
  REQUIRE_FALSE(empty.ok());
  CHECK(reason_of(empty.status()).find("no principal") != std::string::npos);
}

TEST_CASE("an access file others may read is refused, one only its owner may read loads", "[access]") {
  testing::TempDir dir;
  const std::string path = dir.file("tokens");
  std::ofstream(path) << "admin secret\n";
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto open = AccessTable::load(path);
  REQUIRE_FALSE(open.ok());
  CHECK(reason_of(open.status()).find("chmod 600") != std::string::npos);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto loaded = AccessTable::load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->find_token("secret") != nullptr);
  auto missing = AccessTable::load(dir.file("absent"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kStreamMisconfigured);
  CHECK(missing.status().fields().at("path") == dir.file("absent"));
}

}  // namespace
}  // namespace streamd::auth
