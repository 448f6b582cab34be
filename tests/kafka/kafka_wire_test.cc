// The Kafka listener at the byte level, over raw sockets to the real daemon: the facts clients
// depend on (answers in request order, any first request, ApiVersions' refusal) and the bad-input
// rules (what closes a connection, what refuses a batch and writes nothing), each leaving every
// other connection served.
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/kafka/api_table.h"
#include "server/kafka/codec.h"
#include "tests/kafka/batch_helpers.h"
#include "tests/kafka/wire_helpers.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::kafka {
namespace {

using streamd::testing::TestSocket;
using testing::correlation_of;
using testing::create_topic;
using testing::fetch_body;
using testing::frame;
using testing::high_watermark;
using testing::KafkaDaemon;
using testing::metadata_body;
using testing::produce_body;
using testing::produce_result;
using testing::producer_batch;

TEST_CASE("kafka: answers leave in request order, and the first request need not be ApiVersions") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "order");
  // A long-polling fetch first, then two quick requests, in one write: the quick ones wait their turn.
  const std::string pipelined = frame(1, 4, 1, fetch_body("order", 0, 0, 400)) + frame(18, 0, 2, "") +
                                frame(3, 1, 3, metadata_body({"order"}));
  REQUIRE(s.send_all(pipelined));
  std::vector<int32_t> order;
  for (int i = 0; i < 3; ++i) {
    auto answer = s.read_frame();
    REQUIRE(answer);
    order.push_back(correlation_of(*answer));
  }
  CHECK(order == std::vector<int32_t>{1, 2, 3});
}

TEST_CASE("kafka: an ApiVersions version it does not speak is answered 35 in v0 form, and the connection stays") {
  KafkaDaemon d;
  TestSocket s(d.port());
  REQUIRE(s.send_all(frame(18, 9, 5, "")));
  auto refused = s.read_frame();
  REQUIRE(refused);
  Reader r(*refused);
  CHECK(r.i32() == 5);
  CHECK(r.i16() == 35);
  const auto offered = static_cast<int32_t>(api_table().size()) - 2;  // all but SASL's two
  CHECK(r.count(6) == offered);
  // v3 (flexible: header v2 with tagged fields, compact strings in the body) on the same connection.
  std::string v3;
  Writer w(v3);
  w.i32(0);
  w.i16(18);
  w.i16(3);
  w.i32(6);
  w.string("wire-test");
  w.empty_tagged_fields();
  w.compact_string("wire-test");
  w.compact_string("1.0");
  w.empty_tagged_fields();
  put_be32(v3.data(), static_cast<uint32_t>(v3.size() - 4));
  REQUIRE(s.send_all(v3));
  auto ok = s.read_frame();
  REQUIRE(ok);
  Reader a(*ok);
  CHECK(a.i32() == 6);  // response header v0: no tagged fields
  CHECK(a.i16() == 0);
  CHECK(a.compact_array_count(7) == std::optional<int32_t>(offered));
}

TEST_CASE("kafka: protocol violations close only their own connection") {
  KafkaDaemon d({"--limits.max-frame-bytes", "65536"});
  TestSocket bystander(d.port());
  create_topic(bystander, "calm");
  SECTION("a frame over limits.max_frame_bytes") {
    TestSocket s(d.port());
    std::string huge(4, '\0');
    put_be32(huge.data(), 1 << 20);
    REQUIRE(s.send_all(huge));
    CHECK(s.closed_by_peer());
  }
  SECTION("an unknown API key (InitProducerId is not offered)") {
    TestSocket s(d.port());
    REQUIRE(s.send_all(frame(22, 0, 1, "")));
    CHECK(s.closed_by_peer());
  }
  SECTION("a version outside the table (Fetch v3)") {
    TestSocket s(d.port());
    REQUIRE(s.send_all(frame(1, 3, 1, fetch_body("calm", 0, 0, 0))));
    CHECK(s.closed_by_peer());
  }
  SECTION("a body that does not parse (a Metadata topic list cut short)") {
    TestSocket s(d.port());
    std::string body;
    Writer(body).i32(3);
    REQUIRE(s.send_all(frame(3, 1, 1, body)));
    CHECK(s.closed_by_peer());
  }
  SECTION("answers owed before the violation still go out") {
    TestSocket s(d.port());
    REQUIRE(s.send_all(frame(18, 0, 1, "") + frame(22, 0, 2, "")));
    auto answer = s.read_frame();
    REQUIRE(answer);
    CHECK(correlation_of(*answer) == 1);
    CHECK(s.closed_by_peer());
  }
  REQUIRE(bystander.send_all(frame(18, 1, 50, "")));
  auto still = bystander.read_frame();
  REQUIRE(still);
  CHECK(correlation_of(*still) == 50);
}

TEST_CASE("kafka: a refused batch answers its Kafka error and writes nothing") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "strict");
  std::string batch = producer_batch({{"k", "v", {}}, {"", "w", {}}});
  int16_t expected = 0;
  SECTION("a bad CRC is CORRUPT_MESSAGE") {
    batch[batch.size() - 2] ^= 1;
    expected = 2;
  }
  SECTION("a record count that does not match is CORRUPT_MESSAGE") {
    put_be32(batch.data() + batch_v2::kRecordCount, 3);
    testing::reseal(batch);
    expected = 2;
  }
  SECTION("a control batch is INVALID_RECORD") {
    batch = producer_batch({{"", "c", {}}}, Compression::kNone, batch_v2::kControl);
    expected = 87;
  }
  SECTION("a transactional batch is INVALID_RECORD") {
    batch = producer_batch({{"", "t", {}}}, Compression::kNone, batch_v2::kTransactional);
    expected = 87;
  }
  SECTION("a 2 MB message is MESSAGE_TOO_LARGE") {
    batch = producer_batch({{"", std::string(2'000'000, 'm'), {}}});
    expected = 10;
  }
  REQUIRE(s.send_all(frame(0, 3, 11, produce_body("strict", 0, batch))));
  auto answer = s.read_frame();
  REQUIRE(answer);
  CHECK(produce_result(*answer).first == expected);
  CHECK(high_watermark(d.port(), "strict") == 0);
  // The connection goes on serving: a good batch after the refused one is written.
  REQUIRE(s.send_all(frame(0, 3, 12, produce_body("strict", 0, producer_batch({{"", "ok", {}}})))));
  auto good = s.read_frame();
  REQUIRE(good);
  CHECK(produce_result(*good) == std::pair<int16_t, int64_t>{0, 0});
  CHECK(high_watermark(d.port(), "strict") == 1);
}

TEST_CASE("kafka: acks=0 is written but answered with nothing") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "quiet");
  REQUIRE(s.send_all(frame(0, 3, 21, produce_body("quiet", 0, producer_batch({{"", "x", {}}}), 0)) +
                     frame(18, 0, 22, "")));
  auto answer = s.read_frame();
  REQUIRE(answer);
  CHECK(correlation_of(*answer) == 22);
  // Nothing says when it is synced: the record shows up soon after.
  int64_t hw = 0;
  for (int i = 0; i < 100 && hw == 0; ++i) {
    hw = high_watermark(d.port(), "quiet");
    if (hw == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(hw == 1);
}

TEST_CASE("kafka: with enforce_placement a keyed batch off its FNV-1a partition is INVALID_RECORD") {
  KafkaDaemon d({"--kafka.enforce-placement", "true", "--default-policy.partitions", "4"});
  TestSocket s(d.port());
  create_topic(s, "placed");
  // fnv1a32("a") % 4 == 0 (docs/KAFKA.md §Partitioners): partition 1 is the wrong one.
  REQUIRE(s.send_all(frame(0, 3, 31, produce_body("placed", 1, producer_batch({{"a", "x", {}}})))));
  auto refused = s.read_frame();
  REQUIRE(refused);
  CHECK(produce_result(*refused).first == 87);
  REQUIRE(s.send_all(frame(0, 3, 32, produce_body("placed", 0, producer_batch({{"a", "x", {}}})))));
  auto ok = s.read_frame();
  REQUIRE(ok);
  CHECK(produce_result(*ok).first == 0);
}

}  // namespace
}  // namespace streamd::kafka

namespace streamd::kafka {
namespace {

TEST_CASE("kafka: a connection idle for limits.idle_timeout is closed, one owed a long-poll is not") {
  KafkaDaemon d({"--limits.idle-timeout", "300ms"});
  TestSocket waiting(d.port());
  create_topic(waiting, "idle");
  // A fetch that waits longer than the idle timeout is answered, not cut off.
  REQUIRE(waiting.send_all(frame(1, 4, 41, fetch_body("idle", 0, 0, 800))));
  TestSocket silent(d.port());
  REQUIRE(silent.send_all(frame(18, 0, 42, "")));
  REQUIRE(silent.read_frame());
  auto answer = waiting.read_frame(std::chrono::seconds(5));
  REQUIRE(answer);
  CHECK(correlation_of(*answer) == 41);
  CHECK(silent.closed_by_peer(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace streamd::kafka
