#include "client/streamctl/json_writer.h"

#include <catch2/catch.hpp>

namespace streamd::streamctl {
namespace {

TEST_CASE("objects and arrays nest with commas in the right places") {
  JsonWriter w;
  w.begin_object()
      .field("name", "orders")
      .field("partitions", 3)
      .field("big", uint64_t{18446744073709551615u})
      .field("neg", int64_t{-5})
      .field("flag", true);
  w.key("list")
      .begin_array()
      .number(1)
      .number(2)
      .begin_object()
      .end_object()
      .begin_array()
      .end_array()
      .end_array();
  w.key("none").null();
  w.end_object();
  CHECK(w.str() == R"({"name":"orders","partitions":3,"big":18446744073709551615,"neg":-5,"flag":true,)"
                   R"("list":[1,2,{},[]],"none":null})");
}

TEST_CASE("top-level arrays of objects") {
  JsonWriter w;
  w.begin_array();
  w.begin_object().field("partition", 0).end_object();
  w.begin_object().field("partition", 1).end_object();
  w.end_array();
  CHECK(w.str() == R"([{"partition":0},{"partition":1}])");
}

TEST_CASE("strings are escaped per RFC 8259") {
  JsonWriter w;
  w.string(std::string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\0", 15));
  CHECK(w.str() == R"("q\"b\\s/\b\f\n\r\t\u0001\u001f\u007f\u0000")");
}

TEST_CASE("valid UTF-8 passes through and invalid bytes become U+FFFD") {
  JsonWriter a;
  a.string("h\xC3\xA9llo \xF0\x9F\x98\x80");
  CHECK(a.str() == "\"h\xC3\xA9llo \xF0\x9F\x98\x80\"");
  JsonWriter b;
  b.string(
      "a\xFF"
      "b\xC3");
  CHECK(b.str() ==
        "\"a\xEF\xBF\xBD"
        "b\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace streamd::streamctl
