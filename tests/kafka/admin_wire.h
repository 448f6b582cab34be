// Raw-socket helpers for the admin APIs' byte-level tests (kafka_admin_wire_test.cc,
// kafka_config_wire_test.cc), beside wire_helpers.h's daemon: request frames in either encoding, and
// answers read past their header.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/kafka/codec.h"
#include "tests/kafka/wire_helpers.h"

namespace streamd::kafka::testing {

// A request frame: header v1, or v2 (with tagged fields: one unknown tag, which must be skipped)
// when `flexible`; the body is written by `body` in the matching encoding.
template <class Body>
std::string request(int16_t key, int16_t version, bool flexible, Body body) {
  std::string out;
  Writer w(out);
  w.i32(0);
  w.i16(key);
  w.i16(version);
  w.i32(version * 100 + key);
  w.string("admin-wire");
  if (flexible) {
    w.uvarint(1);  // a tagged field no version defines: tag 9, 2 bytes
    w.uvarint(9);
    w.uvarint(2);
    w.raw("zz");
  }
  Writer b(out, flexible);
  body(b);
  put_be32(out.data(), static_cast<uint32_t>(out.size() - 4));
  return out;
}

// Sends `frame` and returns a Reader over the answer's body, past its header (v1 when flexible).
struct Answer {
  std::string bytes;
  Reader r{std::string_view()};
};
inline std::unique_ptr<Answer> ask(streamd::testing::TestSocket& s, const std::string& frame, bool flexible) {
  REQUIRE(s.send_all(frame));
  auto got = s.read_frame();
  REQUIRE(got);
  auto a = std::make_unique<Answer>();
  a->bytes = std::move(*got);
  a->r = Reader(a->bytes, flexible);
  a->r.i32();  // correlation id
  if (flexible) {
    CHECK(a->r.uvarint() == 0);  // response header v1: no tagged fields
  }
  return a;
}

// CreateTopics v0 of one topic with `configs`: the error code.
inline int16_t create_topic_code(streamd::testing::TestSocket& s, const std::string& topic, int32_t partitions,
                            const std::vector<std::pair<std::string, std::string>>& configs = {}) {
  auto a = ask(s, request(19, 0, false, [&](Writer& w) {
                 w.array(1);
                 w.str(topic);
                 w.i32(partitions);
                 w.i16(1);
                 w.array(0);
                 w.array(static_cast<int32_t>(configs.size()));
                 for (const auto& [name, value] : configs) {
                   w.str(name);
                   w.nullable_str(value);
                 }
                 w.i32(1000);
               }),
               false);
  a->r.count();
  CHECK(a->r.string() == topic);
  return a->r.i16();
}

}  // namespace streamd::kafka::testing
