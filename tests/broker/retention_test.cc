// Retention by retain_for and retain_bytes, whole segments only, by hand and from the background task.
#include "server/broker/retention.h"

#include <catch2/catch.hpp>

#include "tests/broker/broker_fixture.h"
#include "tests/support/manual_executor.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using testing::BrokerFixture;
using testing::check_error;

// Each append of one 80-byte record (a batch of 154 bytes) fills a segment of its own (segment_bytes 100).
Policy one_batch_segments() {
  Policy p;
  p.segment_bytes = 100;
  return p;
}

void append_n(BrokerFixture& f, int n) {
  for (int i = 0; i < n; ++i) f.append("s", {{"", std::string(80, 'x')}});
}

uint32_t segments(BrokerFixture& f) { return f.broker->describe_stream("s")->partitions[0].segments; }

ENGINE_TEST_CASE("retain_for drops the segments whose newest record is older than it, the active one once rolled") {
  BrokerFixture f(TestType::kEngine);
  Policy policy = one_batch_segments();
  policy.retain_for = minutes(10);
  f.create("s", policy);
  append_n(f, 2);  // offsets 0, 1 at t0
  f.clock.advance(minutes(6));
  append_n(f, 2);  // offsets 2, 3 at t0+6m; 3 is in the active segment
  f.clock.advance(minutes(5));
  REQUIRE(f.broker->apply_retention().ok());
  CHECK(f.bounds("s", 0) == Bounds{Offset(2), Offset(4)});
  f.clock.advance(minutes(30));
  REQUIRE(f.broker->apply_retention().ok());
  // Offset 3 sat in the active segment: it was rolled and dropped with the rest; next keeps counting.
  CHECK(f.bounds("s", 0) == Bounds{Offset(4), Offset(4)});
  CHECK(segments(f) == 1);
  check_error(f.broker->read("s", {{PartitionId(0), Offset(2)}}, 1, 0).value()[0].status, Code::kOffsetTrimmed,
              {{"requested", "2"}, {"first", "4"}});
  append_n(f, 1);
  CHECK(f.bounds("s", 0) == Bounds{Offset(4), Offset(5)});
}

ENGINE_TEST_CASE("a quiet partition's records expire even though they never filled a segment") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.retain_for = minutes(10);
  f.create("s", policy);
  append_n(f, 3);
  f.clock.advance(minutes(5));
  REQUIRE(f.broker->apply_retention().ok());
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});
  f.clock.advance(minutes(6));
  REQUIRE(f.broker->apply_retention().ok());
  CHECK(f.bounds("s", 0) == Bounds{Offset(3), Offset(3)});
}

ENGINE_TEST_CASE("retain_bytes drops the oldest segments while the partition holds more than it") {
  BrokerFixture f(TestType::kEngine);
  Policy policy = one_batch_segments();
  policy.retain_bytes = 350;
  f.create("s", policy);
  append_n(f, 5);
  const uint64_t segment = f.broker->describe_stream("s")->partitions[0].bytes / 5;
  REQUIRE(segment > 80);
  REQUIRE(segment * 3 > 350);
  REQUIRE(segment * 2 <= 350);
  REQUIRE(f.broker->apply_retention().ok());
  auto d = f.broker->describe_stream("s");
  CHECK(d->partitions[0].bounds == Bounds{Offset(3), Offset(5)});
  CHECK(d->partitions[0].bytes <= 350);
}

ENGINE_TEST_CASE("a policy without retention keeps everything") {
  BrokerFixture f(TestType::kEngine);
  f.create("s", one_batch_segments());
  append_n(f, 3);
  f.clock.advance(std::chrono::hours(24 * 365));
  REQUIRE(f.broker->apply_retention().ok());
  CHECK(f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});
}

ENGINE_TEST_CASE("the background task applies retention every retention_check_period") {
  static testing::InlineExecutor inline_storage;  // the pass runs inside advance(), deterministically
  BrokerOptions options = BrokerFixture::default_options();
  options.retention_check_period = milliseconds(500);
  options.maintenance = &inline_storage;
  BrokerFixture f(TestType::kEngine, options);
  f.close();
  f.open(&inline_storage);
  Policy policy = one_batch_segments();
  policy.retain_for = minutes(1);
  f.create("s", policy);
  append_n(f, 3);
  f.clock.advance(minutes(2));
  f.scheduler.advance(milliseconds(499));
  CHECK(f.bounds("s", 0).first == Offset(0));
  f.scheduler.advance(milliseconds(1));
  CHECK(f.bounds("s", 0).first == Offset(3));  // every record had expired, the active segment's too
  // It keeps running.
  append_n(f, 1);
  f.clock.advance(minutes(2));
  f.scheduler.advance(milliseconds(500));
  CHECK(f.bounds("s", 0).first == Offset(4));
  f.close();
  CHECK(f.scheduler.pending() == 0);
}

// Found by bench/soak: with the passes on the storage executor, a retention pass and a compaction
// pass each waiting in roll_active_if for a flush held both storage threads, so the flush they waited
// for could never run, and no append was acknowledged again.
ENGINE_TEST_CASE("retention and compaction passes never hold a thread of the storage executor") {
  BrokerOptions options = BrokerFixture::default_options();
  options.retention_check_period = milliseconds(500);
  options.compaction_period = milliseconds(500);
  BrokerFixture f(TestType::kEngine, options);
  f.close();
  testing::ManualExecutor storage;
  f.open(&storage);
  f.scheduler.advance(milliseconds(500));
  f.scheduler.advance(milliseconds(500));
  CHECK(storage.pending() == 0);  // both passes ran on the broker's maintenance thread instead
  f.close();
}

}  // namespace
}  // namespace streamd
