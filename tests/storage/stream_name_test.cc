#include "server/storage/stream_name.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd {
namespace {

TEST_CASE("stream names of [A-Za-z0-9._-], 1 to 200 bytes, not starting with '.', are accepted") {
  auto name = GENERATE(as<std::string>{}, "a", "orders", "Orders.v2", "a-b_c.d", "0", "-", "_x", "a..b",
                       std::string(200, 'z'));
  INFO(name);
  CHECK(validate_stream_name(name).ok());
}

TEST_CASE("every other stream name is refused as STREAM_MISCONFIGURED with field=name") {
  struct Case {
    std::string name;
    std::string reason;
  };
  auto c = GENERATE(Case{"", "empty"}, Case{std::string(201, 'a'), "longer than 200 bytes"},
                    Case{".", "starts with '.'"}, Case{"..", "starts with '.'"}, Case{".hidden", "starts with '.'"},
                    Case{"../x", "starts with '.'"}, Case{"a/b", "byte outside [A-Za-z0-9._-]"},
                    Case{"/abs", "byte outside [A-Za-z0-9._-]"}, Case{"a b", "byte outside [A-Za-z0-9._-]"},
                    Case{std::string("a\0b", 3), "byte outside [A-Za-z0-9._-]"},
                    Case{"caf\xc3\xa9", "byte outside [A-Za-z0-9._-]"}, Case{"a\\b", "byte outside [A-Za-z0-9._-]"});
  INFO(c.name);
  Status s = validate_stream_name(c.name);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == Code::kStreamMisconfigured);
  CHECK(s.field("field") == "name");
  CHECK(s.field("reason") == c.reason);
  CHECK(s.field("length") == std::to_string(c.name.size()));
}

TEST_CASE("a refused name reports the index of its first bad byte") {
  Status s = validate_stream_name("ok/bad");
  CHECK(s.field("index") == "2");
}

}  // namespace
}  // namespace streamd
