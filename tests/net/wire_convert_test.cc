#include "server/net/wire_convert.h"

#include <catch2/catch.hpp>

#include "tests/net/entry_of.h"

namespace streamd {
namespace {

using testing::entry_of;

TEST_CASE("a policy survives the trip to the wire and back", "[wire_convert]") {
  Policy p;
  p.partitions = 12;
  p.max_record_bytes = 4096;
  p.retain_for = std::chrono::hours(24 * 7);
  p.retain_bytes = 1ll << 30;
  p.max_bytes = 1ll << 32;
  p.block_timeout = std::chrono::milliseconds(1500);
  p.segment_bytes = 8 << 20;
  p.compact_after = std::chrono::minutes(90);
  v1::Policy wire;
  policy_to_wire(p, &wire);
  CHECK(wire.retain_for_ms() == 7 * 24 * 3600 * 1000LL);
  CHECK(wire.block_timeout_ms() == 1500);
  CHECK(policy_from_wire(wire) == p);
  CHECK(policy_from_wire(v1::Policy()) == Policy());
}

TEST_CASE("an error carries code, name, message and every field", "[wire_convert]") {
  v1::Error wire;
  error_to_wire(Status::of(Code::kOffsetAhead, {{"requested", "9"}, {"next", "3"}}), &wire);
  CHECK(wire.code() == 0x00022604u);
  CHECK(wire.name() == "OFFSET_AHEAD");
  CHECK(wire.message() == "The requested offset is past the end of the stream");
  CHECK(wire.fields().size() == 2);
  CHECK(wire.fields().at("requested") == "9");
  CHECK(wire.fields().at("next") == "3");
}

TEST_CASE("an entry and a description carry every value", "[wire_convert]") {
  v1::Entry entry;
  entry_to_wire(PartitionId(2), entry_of(Offset(7), Timestamp(123), "k", "p", {{"h", "v"}}), &entry);
  CHECK(entry.partition() == 2);
  CHECK(entry.offset() == 7);
  CHECK(entry.appended_at_us() == 123);
  CHECK(entry.record().key() == "k");
  CHECK(entry.record().payload() == "p");
  CHECK(entry.record().headers(0).name() == "h");
  CHECK(entry.record().headers(0).value() == "v");

  StreamDescription d;
  d.name = "s";
  d.policy.partitions = 2;
  d.created_at = Timestamp(99);
  d.partitions = {{PartitionId(0), {Offset(1), Offset(5)}, 100, 1},
                  {PartitionId(1), {Offset(0), Offset(0)}, 0, 1}};
  v1::DescribeStreamResponse wire;
  description_to_wire(d, &wire);
  CHECK(wire.name() == "s");
  CHECK(wire.policy().partitions() == 2);
  CHECK(wire.created_at_us() == 99);
  REQUIRE(wire.partitions_size() == 2);
  CHECK(wire.partitions(0).first() == 1);
  CHECK(wire.partitions(0).next() == 5);
  CHECK(wire.partitions(0).bytes() == 100);
  CHECK(wire.partitions(1).partition() == 1);
}

}  // namespace
}  // namespace streamd
