// Tests of server/net/auth.cc: the token file's grammar and its refusals, the file's permissions, what
// each access level permits, and how a reload moves the generation.
#include "server/net/auth.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

std::string reason_of(const Status& s) {
  auto it = s.fields().find("reason");
  return it == s.fields().end() ? "" : it->second;
}

TEST_CASE("a token file maps each token to its access; comments and blank lines are skipped", "[auth]") {
  auto table = TokenTable::parse("# tokens\n\nadmin  root-token\nwrite\tproducer-1\r\n  read reader # not a comment\n");
  // A third word is an error, even one starting with '#': only whole-line comments exist.
  REQUIRE_FALSE(table.ok());
  CHECK(table.status().fields().at("line") == "5");

  table = TokenTable::parse("# tokens\n\nadmin  root-token\nwrite\tproducer-1\r\n  read reader\n");
  REQUIRE(table.ok());
  CHECK(table->size() == 3);
  CHECK(table->find("root-token") == Access::kAdmin);
  CHECK(table->find("producer-1") == Access::kWrite);
  CHECK(table->find("reader") == Access::kRead);
  CHECK_FALSE(table->find("").has_value());
  CHECK_FALSE(table->find("reade").has_value());
  CHECK_FALSE(table->find("reader ").has_value());
  CHECK_FALSE(table->find("ROOT-TOKEN").has_value());
}

TEST_CASE("a bad token file is refused naming the line", "[auth]") {
  struct Case {
    const char* text;
    const char* line;
    const char* reason;
  };
  const Case cases[] = {
      {"owner tok\n", "1", "expected read, write or admin before the token"},
      {"read a\nwrite\n", "2", "no token after the access level"},
      {"read a\nadmin a\n", "2", "the token appears twice"},
      {"read a b\n", "1", "more than an access level and a token"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto table = TokenTable::parse(c.text);
    REQUIRE_FALSE(table.ok());
    CHECK(table.status().code() == Code::kStreamMisconfigured);
    CHECK(table.status().fields().at("field") == "auth.token_file");
    CHECK(table.status().fields().at("line") == c.line);
    CHECK(reason_of(table.status()) == c.reason);
  }
  auto empty = TokenTable::parse("# nothing yet\n");
  REQUIRE_FALSE(empty.ok());
  CHECK(reason_of(empty.status()).find("no token") != std::string::npos);
}

TEST_CASE("a token file others may read is refused; one only its owner may read loads", "[auth]") {
  testing::TempDir dir;
  const std::string path = dir.file("tokens");
  std::ofstream(path) << "admin secret\n";
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto open = TokenTable::load(path);
  REQUIRE_FALSE(open.ok());
  CHECK(reason_of(open.status()).find("chmod 600") != std::string::npos);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto loaded = TokenTable::load(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->find("secret") == Access::kAdmin);
  auto missing = TokenTable::load(dir.file("absent"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kStreamMisconfigured);
  CHECK(missing.status().fields().at("path") == dir.file("absent"));
}

TEST_CASE("read reads and commits, write also appends, admin also changes streams", "[auth]") {
  using R = v1::Request;
  const R::BodyCase reading[] = {R::kHello,     R::kListStreams, R::kDescribeStream, R::kRead,
                                 R::kBounds,    R::kPeek,        R::kCommit,         R::kCommitted,
                                 R::kListGroups, R::kOffsetAt,   R::kHealth};
  const R::BodyCase administering[] = {R::kCreateStream, R::kDeleteStream, R::kTrim, R::kCompact};
  for (Access a : {Access::kRead, Access::kWrite, Access::kAdmin}) {
    INFO(access_name(a));
    for (R::BodyCase kind : reading) CHECK(permits(a, kind));
    CHECK(permits(a, R::kAppend) == (a != Access::kRead));
    for (R::BodyCase kind : administering) CHECK(permits(a, kind) == (a == Access::kAdmin));
    CHECK_FALSE(permits(a, R::BODY_NOT_SET));
  }
}

TEST_CASE("without a table every token is admin; each replace starts a new generation", "[auth]") {
  Authenticator auth;
  CHECK_FALSE(auth.enabled());
  CHECK(auth.admit("") == Access::kAdmin);
  CHECK(auth.admit("anything") == Access::kAdmin);
  const uint64_t before = auth.generation();
  auto table = TokenTable::parse("read r\n");
  REQUIRE(table.ok());
  auth.replace(std::make_shared<const TokenTable>(std::move(*table)));
  CHECK(auth.enabled());
  CHECK(auth.generation() == before + 1);
  CHECK(auth.admit("r") == Access::kRead);
  CHECK_FALSE(auth.admit("").has_value());
  CHECK_FALSE(auth.admit("anything").has_value());
}

}  // namespace
}  // namespace streamd
