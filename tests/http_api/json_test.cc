#include "server/http_api/json.h"

#include <catch2/catch.hpp>

namespace streamd::http_api {
namespace {

TEST_CASE("the parser reads RFC 8259 JSON, numbers exactly", "[json]") {
  auto v = parse_json(R"( {"a": [1, -2, 18446744073709551615, 1.5e3], "s": "x\u00e9\ud83d\ude00\n", "t": true, "n": null} )");
  REQUIRE(v.ok());
  const JsonValue* a = v->get("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->items().size() == 4);
  CHECK(a->items()[0].as_u64() == 1u);
  CHECK(a->items()[1].as_i64() == -2);
  CHECK_FALSE(a->items()[1].as_u64().has_value());
  CHECK(a->items()[2].as_u64() == 18446744073709551615ull);
  CHECK_FALSE(a->items()[3].as_u64().has_value());
  CHECK(v->get("s")->text() == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  CHECK(v->get("t")->boolean());
  CHECK(v->get("n")->is_null());
  CHECK(v->u64_of("missing") == std::nullopt);
}

TEST_CASE("the parser refuses what is not JSON, naming where", "[json]") {
  for (const char* bad : {"", "{", "{\"a\":1,}", "[1,]", "{\"a\":1 \"b\":2}", "{'a':1}", "01", "1.", "-", "tru",
                          "\"\\ud800\"", "\"\\udc00\"", "\"\\x\"", "\"a\nb\"", "{\"a\":1}{", "{\"a\":1,\"a\":2}",
                          "\"\xff\"", "// c\n1"}) {
    INFO(bad);
    auto v = parse_json(bad);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == Code::kProtocolError);
    CHECK_FALSE(v.status().field("at").empty());
  }
}

TEST_CASE("nesting deeper than the limit is refused, not recursed into", "[json]") {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  CHECK_FALSE(parse_json(deep).ok());
  std::string fine(kMaxJsonDepth - 1, '[');
  fine += std::string(kMaxJsonDepth - 1, ']');
  CHECK(parse_json(fine).ok());
  CHECK_FALSE(parse_json(std::string(100000, '[')).ok());
}

TEST_CASE("the writer escapes markup and keeps its output valid UTF-8", "[json]") {
  JsonWriter w;
  w.begin_object().field("p", std::string_view("<script>\"\\\x01\xff")).field("n", uint64_t{7}).key("r").real(0.5);
  w.key("a").begin_array().number(-1).boolean(false).null().end_array().end_object();
  CHECK(w.str() == "{\"p\":\"\\u003cscript\\u003e\\\"\\\\\\u0001\xef\xbf\xbd\",\"n\":7,\"r\":0.5,\"a\":[-1,false,null]}");
  auto back = parse_json(w.str());
  REQUIRE(back.ok());
  CHECK(back->get("p")->text() == "<script>\"\\\x01\xef\xbf\xbd");
}

TEST_CASE("UTF-8 validation refuses overlong forms, surrogates and stray bytes", "[json]") {
  CHECK(is_valid_utf8("plain"));
  CHECK(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));
  CHECK_FALSE(is_valid_utf8("\x80"));
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));
}

}  // namespace
}  // namespace streamd::http_api
