// Hostile and broken input: each gets PROTOCOL_ERROR or FRAME_TOO_LARGE and a close, while a second
// client, connected before and after, is served as if nothing happened.
#include <catch2/catch.hpp>
#include <random>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

std::string length_prefix(uint32_t n) {
  std::string out(4, '\0');
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  return out;
}

std::string hello_frame() {
  v1::Request hello;
  hello.set_id(1);
  hello.mutable_hello()->set_protocol_version(1);
  return frame_of(hello);
}

// Sends `bytes` on a fresh connection and returns the error the broker answered before closing.
std::string error_after(uint16_t port, const std::string& bytes, bool end_sending = false) {
  TestSocket s(port);
  REQUIRE(s.connected());
  REQUIRE(s.send_all(bytes));
  if (end_sending) s.shutdown_send();
  std::string name;
  for (int i = 0; i < 4; ++i) {  // a Hello sent first is answered first
    auto body = s.read_frame();
    REQUIRE(body.has_value());
    v1::Response response;
    REQUIRE(response.ParseFromString(*body));
    if (response.has_error()) {
      name = response.error().name();
      break;
    }
  }
  CHECK(s.closed_by_peer());
  return name;
}

void still_serves(WireClient& other) {
  v1::Request health;
  health.mutable_health();
  CHECK(other.call(health).has_health());
  CHECK(other.call(append_request("survivor", {{"", "still here", {}}})).has_append());
}

TEST_CASE("bad input is refused and closed while another client carries on", "[bad_input]") {
  RunningDaemon r({"--limits.max-frame-bytes", "64KiB"});
  const uint16_t port = r.daemon.port();
  WireClient other(port);
  REQUIRE(other.connected());

  SECTION("a length of 0xFFFFFFFF") {
    CHECK(error_after(port, length_prefix(0xFFFFFFFFu)) == "FRAME_TOO_LARGE");
  }
  SECTION("a frame one byte over max_frame_bytes, after Hello") {
    CHECK(error_after(port, hello_frame() + length_prefix(64 * 1024 + 1) + std::string(100, 'x')) ==
          "FRAME_TOO_LARGE");
  }
  SECTION("random bytes") {
    std::mt19937 rng(20261129);
    for (int round = 0; round < 5; ++round) {
      std::string noise(64, '\0');
      for (char& c : noise) c = static_cast<char>(rng());
      // A small length, so the noise is read as a message body and must fail to parse or be refused.
      const std::string frame = length_prefix(60) + noise.substr(0, 60);
      const std::string name = error_after(port, frame);
      CHECK((name == "PROTOCOL_ERROR" || name == "FRAME_TOO_LARGE"));
      // Raw noise, length and all.
      const std::string raw = error_after(port, noise, true);
      CHECK((raw == "PROTOCOL_ERROR" || raw == "FRAME_TOO_LARGE"));
    }
  }
  SECTION("a truncated frame, then the client stops sending") {
    CHECK(error_after(port, hello_frame() + length_prefix(100) + std::string(10, 'x'), true) ==
          "PROTOCOL_ERROR");
  }
  SECTION("a message that does not parse") {
    CHECK(error_after(port, hello_frame() + length_prefix(5) + std::string(5, '\xff')) == "PROTOCOL_ERROR");
  }
  SECTION("a request before Hello") {
    v1::Request append = append_request("s", {{"", "x", {}}});
    append.set_id(7);
    CHECK(error_after(port, frame_of(append)) == "PROTOCOL_ERROR");
  }
  SECTION("a Hello with an unsupported protocol version") {
    v1::Request hello;
    hello.mutable_hello()->set_protocol_version(99);
    CHECK(error_after(port, frame_of(hello)) == "PROTOCOL_ERROR");
  }
  SECTION("a second Hello") {
    CHECK(error_after(port, hello_frame() + hello_frame()) == "PROTOCOL_ERROR");
  }
  SECTION("an empty oneof") {
    v1::Request empty;
    empty.set_id(5);
    CHECK(error_after(port, hello_frame() + frame_of(empty)) == "PROTOCOL_ERROR");
  }
  SECTION("an operation this broker does not know (field 99)") {
    // id = 5, then field 99 (length-delimited, 2 bytes): a newer client's operation.
    const std::string body = std::string("\x08\x05", 2) + std::string("\x9a\x06\x02hi", 5);
    CHECK(error_after(port, hello_frame() + length_prefix(static_cast<uint32_t>(body.size())) + body) ==
          "PROTOCOL_ERROR");
  }
  SECTION("a zero-length frame") {
    CHECK(error_after(port, hello_frame() + length_prefix(0)) == "PROTOCOL_ERROR");
  }
  still_serves(other);
  WireClient fresh(port);
  REQUIRE(fresh.connected());
  still_serves(fresh);
}

TEST_CASE("the error answer carries the request id when the request parsed", "[bad_input]") {
  RunningDaemon r;
  TestSocket s(r.daemon.port());
  v1::Request append = append_request("s", {{"", "x", {}}});
  append.set_id(4242);
  REQUIRE(s.send_all(frame_of(append)));
  auto body = s.read_frame();
  REQUIRE(body.has_value());
  v1::Response response;
  REQUIRE(response.ParseFromString(*body));
  CHECK(response.id() == 4242);
  CHECK(response.error().name() == "PROTOCOL_ERROR");
  CHECK(response.error().code() == 0x00040105u);
  CHECK(response.error().fields().at("reason") == "the first request must be Hello");
}

}  // namespace
}  // namespace streamd::testing
