// Raw-wire helpers of the Kafka listener's tests (kafka_wire_test.cc, kafka_format_wire_test.cc): a daemon
// with the Kafka listener on, request frames and bodies as clients send them, and the few answer fields
// the tests read.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/kafka/codec.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::kafka::testing {

using streamd::testing::DaemonProcess;
using streamd::testing::TestSocket;

struct KafkaDaemon {
  explicit KafkaDaemon(std::vector<std::string> extra = {}) : daemon(args(std::move(extra))) {
    REQUIRE(daemon.start());
  }
  ~KafkaDaemon() {
    if (daemon.running()) CHECK(daemon.stop() == 0);
  }
  static std::vector<std::string> args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--kafka.listen", "127.0.0.1:0"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  uint16_t port() const { return daemon.kafka_port(); }
  DaemonProcess daemon;
};

// A whole request frame: size, header v1 (client id "wire-test"), body.
inline std::string frame(int16_t key, int16_t version, int32_t correlation, const std::string& body) {
  std::string out;
  Writer w(out);
  w.i32(0);
  w.i16(key);
  w.i16(version);
  w.i32(correlation);
  w.string("wire-test");
  w.raw(body);
  put_be32(out.data(), static_cast<uint32_t>(out.size() - 4));
  return out;
}

inline std::string metadata_body(const std::vector<std::string>& topics) {
  std::string b;
  Writer w(b);
  w.array_count(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) w.string(t);
  return b;
}

inline std::string produce_body(const std::string& topic, int32_t partition, const std::string& records,
                                int16_t acks = -1) {
  std::string b;
  Writer w(b);
  w.nullable_string(std::nullopt);  // transactional id
  w.i16(acks);
  w.i32(10000);
  w.array_count(1);
  w.string(topic);
  w.array_count(1);
  w.i32(partition);
  w.bytes(records);
  return b;
}

inline std::string fetch_body(const std::string& topic, int32_t partition, int64_t offset,
                              int32_t max_wait_ms) {
  std::string b;
  Writer w(b);
  w.i32(-1);
  w.i32(max_wait_ms);
  w.i32(1);
  w.i32(1 << 20);
  w.i8(0);
  w.array_count(1);
  w.string(topic);
  w.array_count(1);
  w.i32(partition);
  w.i64(offset);
  w.i32(1 << 20);
  return b;
}

inline int32_t correlation_of(const std::string& response) {
  Reader r(response);
  return r.i32();
}

// Produce v3's answer for one partition: error and base offset.
inline std::pair<int16_t, int64_t> produce_result(const std::string& response) {
  Reader r(response);
  r.i32();  // correlation
  r.count();
  r.string();
  r.count();
  r.i32();
  const int16_t error = r.i16();
  const int64_t base = r.i64();
  REQUIRE_FALSE(r.failed());
  return {error, base};
}

// Creates `topic` through Metadata v3 (auto-create) and checks it answers.
inline void create_topic(TestSocket& s, const std::string& topic) {
  REQUIRE(s.send_all(frame(3, 3, 99, metadata_body({topic}))));
  auto answer = s.read_frame();
  REQUIRE(answer);
  CHECK(correlation_of(*answer) == 99);
}

// The partition's high watermark, through Fetch v4 with no wait.
inline int64_t high_watermark(uint16_t port, const std::string& topic) {
  TestSocket s(port);
  REQUIRE(s.send_all(frame(1, 4, 7, fetch_body(topic, 0, 0, 0))));
  auto answer = s.read_frame();
  REQUIRE(answer);
  Reader r(*answer);
  r.i32();  // correlation
  r.i32();  // throttle
  r.count();
  r.string();
  r.count();
  r.i32();
  CHECK(r.i16() == 0);
  return r.i64();
}

}  // namespace streamd::kafka::testing
