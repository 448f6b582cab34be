// Broker::alter_stream on every engine (the conformance suite): only the fields given change, the
// change is kept across a reopen where the engine keeps anything, the partition count stays, bad values
// are refused by field, validate_only changes nothing, and every reader of the policy — routing's record
// limit, backpressure, retention, compaction, describe — goes by the new one at once.
#include <catch2/catch.hpp>
#include <future>

#include "server/broker/policy_change.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::inputs;
using testing::TestEngine;

Policy policy_of(BrokerFixture& f, const std::string& stream) {
  auto d = f.broker->describe_stream(stream);
  REQUIRE(d.ok());
  return d->policy;
}

TEST_CASE("a policy change applies the fields it sets to a policy and leaves the others") {
  Policy current;
  current.partitions = 3;
  current.retain_for = minutes(5);
  current.max_bytes = 4 << 20;
  current = current.normalized();
  PolicyChange change;
  change.retain_bytes = 1000;
  change.segment_bytes = 0;  // the default, as at creation
  change.partitions = 3;     // its own count is no change
  auto next = change.apply_to(current);
  REQUIRE(next.ok());
  Policy expected = current;
  expected.retain_bytes = 1000;
  expected.segment_bytes = Policy::kDefaultSegmentBytes;
  CHECK(*next == expected);
  CHECK(PolicyChange{}.apply_to(current).value() == current);
  CHECK(PolicyChange{}.empty());
  CHECK_FALSE(change.empty());

  PolicyChange more_partitions;
  more_partitions.partitions = 4;
  check_error(more_partitions.apply_to(current).status(), Code::kStreamMisconfigured,
              {{"field", "partitions"}, {"value", "4"}, {"partitions", "3"}});
  PolicyChange below_records;
  below_records.max_bytes = 100;  // below the normalized 1 MiB max_record_bytes
  check_error(below_records.apply_to(current).status(), Code::kStreamMisconfigured, {{"field", "max_bytes"}});
  PolicyChange waits_for_nothing;
  waits_for_nothing.max_bytes = 0;
  waits_for_nothing.block_timeout = seconds(1);
  check_error(waits_for_nothing.apply_to(current).status(), Code::kStreamMisconfigured, {{"field", "block_timeout"}});
}

ENGINE_TEST_CASE("alter_stream changes only the fields given, and a durable engine keeps the change across a reopen") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.partitions = 2;
  policy.retain_for = minutes(60);
  policy.max_bytes = 8 << 20;
  f.create("s", policy);
  f.append("s", {{"k", "before"}});

  PolicyChange change;
  change.retain_for = minutes(5);
  change.retain_bytes = 1 << 20;
  change.compact_after = seconds(30);
  auto altered = f.broker->alter_stream("s", change);
  INFO(altered.status().to_string());
  REQUIRE(altered.ok());
  Policy expected = policy.normalized();
  expected.retain_for = minutes(5);
  expected.retain_bytes = 1 << 20;
  expected.compact_after = seconds(30);
  CHECK(*altered == expected);
  CHECK(policy_of(f, "s") == expected);
  CHECK(f.read("s", 0).size() + f.read("s", 1).size() == 1);  // the records stay

  if (f.engine == TestEngine::kMemory) return;  // nothing of it survives a restart
  f.reopen();
  CHECK(policy_of(f, "s") == expected);
}

ENGINE_TEST_CASE("alter_stream refuses another partition count, a bad value and an absent stream, changing nothing") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.partitions = 3;
  policy.retain_bytes = 4096;
  f.create("s", policy);

  PolicyChange partitions;
  partitions.partitions = 6;
  partitions.retain_bytes = 8192;
  check_error(f.broker->alter_stream("s", partitions).status(), Code::kStreamMisconfigured,
              {{"field", "partitions"}, {"value", "6"}, {"partitions", "3"}, {"stream", "s"}});
  PolicyChange negative;
  negative.retain_for = milliseconds(-1);
  check_error(f.broker->alter_stream("s", negative).status(), Code::kStreamMisconfigured,
              {{"field", "retain_for"}, {"stream", "s"}});
  check_error(f.broker->alter_stream("absent", negative).status(), Code::kStreamNotFound, {{"stream", "absent"}});
  check_error(f.broker->alter_stream("bad/name", negative).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  CHECK(policy_of(f, "s") == policy.normalized());
}

ENGINE_TEST_CASE("alter_stream with validate_only answers the policy the change would make and changes nothing") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  PolicyChange change;
  change.max_bytes = 2 << 20;
  change.block_timeout = milliseconds(250);
  auto would = f.broker->alter_stream("s", change, true);
  REQUIRE(would.ok());
  CHECK(would->max_bytes == 2 << 20);
  CHECK(would->block_timeout == milliseconds(250));
  CHECK(policy_of(f, "s") == Policy{}.normalized());
  PolicyChange bad;
  bad.block_timeout = milliseconds(250);  // without max_bytes
  check_error(f.broker->alter_stream("s", bad, true).status(), Code::kStreamMisconfigured, {{"field", "block_timeout"}});
}

ENGINE_TEST_CASE("a shortened retain_for is applied by the next retention pass to a live stream") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.retain_for = std::chrono::hours(24);
  policy.segment_bytes = 100;  // one 80-byte record a segment
  f.create("s", policy);
  for (int i = 0; i < 3; ++i) f.append("s", {{"", std::string(80, 'x')}});
  f.clock.advance(minutes(10));
  f.append("s", {{"", std::string(80, 'y')}});
  f.clock.advance(minutes(1));
  REQUIRE(f.broker->apply_retention().ok());
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(4)});  // a day's retention keeps everything

  PolicyChange shorter;
  shorter.retain_for = minutes(5);
  REQUIRE(f.broker->alter_stream("s", shorter).ok());
  REQUIRE(f.broker->apply_retention().ok());
  // The three records of 11 minutes ago are past 5 minutes; the one of a minute ago stays.
  CHECK(f.bounds("s", 0) == Bounds{Offset(3), Offset(4)});
}

ENGINE_TEST_CASE("a changed max_record_bytes decides the next append's records") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.max_record_bytes = 1000;
  f.create("s", policy);
  check_error(f.try_append("s", {{"", std::string(1500, 'x')}}).status(), Code::kRecordTooLarge, {});
  PolicyChange larger;
  larger.max_record_bytes = 2000;
  REQUIRE(f.broker->alter_stream("s", larger).ok());
  f.append("s", {{"", std::string(1500, 'x')}});
  PolicyChange smaller;
  smaller.max_record_bytes = 500;
  REQUIRE(f.broker->alter_stream("s", smaller).ok());
  check_error(f.try_append("s", {{"", std::string(600, 'x')}}).status(), Code::kRecordTooLarge, {});
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(1)});
}

ENGINE_TEST_CASE("max_bytes set on a stream that had none makes it full, and raising it admits the waiting append") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  for (int i = 0; i < 4; ++i) f.append("s", {{"", std::string(1000, 'x')}});
  const uint64_t held = f.broker->describe_stream("s")->partitions[0].bytes;

  PolicyChange bounded;
  bounded.max_bytes = static_cast<int64_t>(held);
  bounded.max_record_bytes = 1000 + 100;  // so that max_bytes may be this small
  REQUIRE(f.broker->alter_stream("s", bounded).ok());
  check_error(f.try_append("s", {{"", "refused"}}).status(), Code::kStreamFull,
              {{"stream", "s"}, {"max_bytes", std::to_string(held)}, {"block_timeout_ms", "0"}});

  PolicyChange waits;
  waits.block_timeout = seconds(10);
  REQUIRE(f.broker->alter_stream("s", waits).ok());
  std::promise<Result<AppendResult>> done;
  f.broker->append("s", inputs({{"", "waited"}}), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  auto answer = done.get_future();
  CHECK(answer.wait_for(milliseconds(50)) == std::future_status::timeout);  // waiting, not refused
  PolicyChange raised;
  raised.max_bytes = static_cast<int64_t>(2 * held);
  REQUIRE(f.broker->alter_stream("s", raised).ok());
  auto r = answer.get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK(r->range.first == Offset(4));
}

ENGINE_TEST_CASE("compact_after set on a live stream lets compaction drop what it replaced") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.segment_bytes = 200;
  f.create("s", policy);
  f.append("s", {{"k", "1"}});
  f.append("s", {{"k", "2"}});
  f.clock.advance(seconds(30));
  f.append("s", {{"filler", std::string(200, 'f')}});
  CHECK(f.broker->compact("s", PartitionId(0))->scanned == 0);  // compact_after 0: never
  PolicyChange change;
  change.compact_after = seconds(10);
  REQUIRE(f.broker->alter_stream("s", change).ok());
  auto result = f.broker->compact("s", PartitionId(0));
  REQUIRE(result.ok());
  CHECK(result->dropped == 1);
  CHECK(f.read("s", 0) == std::vector<std::pair<uint64_t, std::string>>{{1, "2"}, {2, std::string(200, 'f')}});
}

}  // namespace
}  // namespace streamd
