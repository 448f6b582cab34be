// Idempotent appends over the wire against the real daemon (docs/PROTOCOL.md §"Idempotent appends",
// docs/SEMANTICS.md §11): identities, pipelined sequences, a resend answered with its first copy's
// offsets and written once, gaps, fenced epochs, the protocol's refusals — and the producers' states
// surviving a clean restart and a kill -9, on the file and the memory engines.
#include <catch2/catch.hpp>

#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

struct Identity {
  int64_t id = -1;
  int32_t epoch = 0;
};

Identity init_producer(WireClient& c, std::optional<Identity> current = std::nullopt) {
  v1::Request r;
  auto* body = r.mutable_init_producer();
  if (current) {
    body->set_has_current(true);
    body->set_producer_id(current->id);
    body->set_epoch(current->epoch);
  }
  v1::Response answer = c.call(r);
  REQUIRE(answer.has_init_producer());
  return {answer.init_producer().producer_id(), answer.init_producer().epoch()};
}

v1::Request stamped(const std::string& stream, int32_t partition, Identity who, int32_t sequence, int records,
                    const std::string& tag) {
  std::vector<TestRecord> batch;
  for (int i = 0; i < records; ++i) batch.push_back({"", tag + "-" + std::to_string(i), {}});
  v1::Request r = append_request(stream, batch);
  r.mutable_append()->set_partition(partition);
  r.mutable_append()->mutable_producer()->set_producer_id(who.id);
  r.mutable_append()->mutable_producer()->set_epoch(who.epoch);
  r.mutable_append()->mutable_producer()->set_sequence(sequence);
  return r;
}

uint64_t next_of(WireClient& c, const std::string& stream, int32_t partition) {
  v1::Response b = c.call(bounds_request(stream, partition));
  REQUIRE(b.has_bounds());
  return b.bounds().next();
}

TEST_CASE("idempotent appends: pipelined sequences, a resend answered with its offsets, written once",
          "[protocol][idempotence]") {
  const std::string engine = GENERATE(std::string("file"), std::string("memory"));
  DaemonProcess daemon({"--storage.engine", engine});
  REQUIRE(daemon.start());
  WireClient c(daemon.port());
  REQUIRE(c.call(create_request("s", 2)).has_create_stream());
  const Identity a = init_producer(c);
  const Identity b = init_producer(c);
  CHECK(a.id >= 0);
  CHECK(b.id != a.id);
  CHECK(a.epoch == 0);

  // Five batches of two records pipelined on partition 1: sequences 0, 2, 4, 6, 8.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(c.send(stamped("s", 1, a, i * 2, 2, "b" + std::to_string(i))));
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (uint64_t id : ids) {
    auto answer = c.wait_for(id);
    REQUIRE(answer);
    REQUIRE(answer->has_append());
    CHECK(answer->append().partition() == 1);
    ranges.emplace_back(answer->append().first(), answer->append().last());
  }
  CHECK(next_of(c, "s", 1) == 10);
  // A resend of the third batch, as after a lost answer: its offsets, and nothing written.
  v1::Response again = c.call(stamped("s", 1, a, 4, 2, "b2"));
  REQUIRE(again.has_append());
  CHECK(std::make_pair(again.append().first(), again.append().last()) == ranges[2]);
  CHECK(next_of(c, "s", 1) == 10);
  // A gap is refused, naming what was expected; nothing written.
  v1::Response gap = c.call(stamped("s", 1, a, 12, 1, "gap"));
  CHECK(error_name(gap) == "OUT_OF_ORDER_SEQUENCE");
  CHECK(gap.error().fields().at("expected") == "10");
  CHECK(next_of(c, "s", 1) == 10);
  // Another producer's sequences are its own; the other partition's too.
  CHECK(c.call(stamped("s", 1, b, 0, 1, "other")).has_append());
  CHECK(c.call(stamped("s", 0, a, 0, 1, "p0")).has_append());
  // The next epoch fences the old one on the partitions it writes to, and must start at 0.
  const Identity a1 = init_producer(c, a);
  CHECK(a1.id == a.id);
  CHECK(a1.epoch == 1);
  CHECK(error_name(c.call(stamped("s", 1, a1, 5, 1, "late"))) == "OUT_OF_ORDER_SEQUENCE");
  CHECK(c.call(stamped("s", 1, a1, 0, 1, "new epoch")).has_append());
  v1::Response fenced = c.call(stamped("s", 1, a, 10, 1, "zombie"));
  CHECK(error_name(fenced) == "PRODUCER_FENCED");
  CHECK(fenced.error().fields().at("current_epoch") == "1");
  CHECK(next_of(c, "s", 1) == 12);
}

TEST_CASE("idempotent appends: the protocol's refusals change nothing", "[protocol][idempotence]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  WireClient c(daemon.port());
  REQUIRE(c.call(create_request("s", 2)).has_create_stream());
  const Identity a = init_producer(c);
  v1::Request no_partition = stamped("s", 0, a, 0, 1, "x");
  no_partition.mutable_append()->clear_partition();
  CHECK(error_name(c.call(no_partition)) == "PROTOCOL_ERROR");
  CHECK(error_name(c.call(stamped("s", 0, a, -1, 1, "x"))) == "PROTOCOL_ERROR");
  CHECK(error_name(c.call(stamped("s", 0, {a.id, 40000}, 0, 1, "x"))) == "PROTOCOL_ERROR");
  CHECK(error_name(c.call(stamped("s", 0, {-5, 0}, 0, 1, "x"))) == "PROTOCOL_ERROR");
  CHECK(error_name(c.call(stamped("s", 7, a, 0, 1, "x"))) == "UNKNOWN_PARTITION");
  // A keyed record must be one its key places in the named partition.
  v1::Request misplaced = stamped("s", 0, a, 0, 1, "x");
  for (int i = 0;; ++i) {
    const std::string key = "k" + std::to_string(i);
    v1::Request probe = append_request("s", {{key, "probe", {}}});
    v1::Response placed = c.call(probe);
    REQUIRE(placed.has_append());
    if (placed.append().partition() == 1) {
      misplaced.mutable_append()->mutable_records(0)->set_key(key);
      break;
    }
  }
  CHECK(error_name(c.call(misplaced)) == "PARTITIONS_MIXED");
  // Nothing those refusals carried took a sequence: the producer's first batch is still taken at 0.
  CHECK(c.call(stamped("s", 0, a, 0, 1, "first")).has_append());
}

TEST_CASE("idempotent appends: the producers' states survive a clean restart and a kill -9",
          "[protocol][idempotence]") {
  const bool kill9 = GENERATE(false, true);
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  Identity a;
  std::pair<uint64_t, uint64_t> last;
  {
    WireClient c(daemon.port());
    REQUIRE(c.call(create_request("s", 1)).has_create_stream());
    a = init_producer(c);
    for (int i = 0; i < 8; ++i) {
      v1::Response r = c.call(stamped("s", 0, a, i * 3, 3, "b" + std::to_string(i)));
      REQUIRE(r.has_append());
      last = {r.append().first(), r.append().last()};
    }
  }
  if (kill9) {
    daemon.kill9();
  } else {
    REQUIRE(daemon.stop() == 0);
  }
  REQUIRE(daemon.start());
  WireClient c(daemon.port());
  // The last batch resent after the restart is recognised; the next one follows on; a gap is refused.
  v1::Response again = c.call(stamped("s", 0, a, 21, 3, "b7"));
  REQUIRE(again.has_append());
  CHECK(std::make_pair(again.append().first(), again.append().last()) == last);
  CHECK(next_of(c, "s", 0) == 24);
  CHECK(error_name(c.call(stamped("s", 0, a, 30, 1, "gap"))) == "OUT_OF_ORDER_SEQUENCE");
  CHECK(c.call(stamped("s", 0, a, 24, 1, "next")).has_append());
  // Ids are never handed out again after a restart.
  CHECK(init_producer(c).id > a.id);
}

}  // namespace
}  // namespace streamd::testing
