#include "client/consumer.h"

#include <catch2/catch.hpp>

#include "client/admin.h"
#include "fake_log.h"

namespace streamd::client {
namespace {

using std::chrono::milliseconds;
using testing::FakeLog;

ConnectionOptions consumer_options(uint16_t port) {
  ConnectionOptions options;
  options.broker = {"127.0.0.1", port};
  return options;
}

void fill(Connection& connection, int32_t partition_count, int per_partition) {
  Admin admin(connection);
  // Unkeyed single-record batches rotate over the partitions.
  for (int i = 0; i < partition_count * per_partition; ++i) {
    REQUIRE(admin.append("s", {Record{"", "r" + std::to_string(i), {}}}).ok());
  }
}

TEST_CASE("a whole stream is read interleaved, each partition in order") {
  FakeLog log;
  log.create("s", 3);
  Connection connection(consumer_options(log.port()));
  fill(connection, 3, 10);
  ConsumerOptions options;
  options.max_records = 4;
  options.wait = milliseconds(0);
  auto consumer = Consumer::open(connection, "s", options);
  REQUIRE(consumer.ok());
  CHECK((*consumer)->partitions() == std::vector<int32_t>{0, 1, 2});
  std::map<int32_t, uint64_t> next;
  size_t total = 0;
  for (int polls = 0; polls < 10; ++polls) {
    auto entries = (*consumer)->poll();
    REQUIRE(entries.ok());
    for (const Entry& e : *entries) {
      CHECK(e.offset == next[e.partition]);
      next[e.partition] = e.offset + 1;
      ++total;
    }
  }
  CHECK(total == 30);
  CHECK((*consumer)->position(1) == 10);
}

TEST_CASE("start positions: earliest, latest, an offset, a time") {
  FakeLog log;
  log.create("s", 1);
  Connection connection(consumer_options(log.port()));
  fill(connection, 1, 5);
  auto first_offset = [&](StartPosition start) -> int64_t {
    ConsumerOptions options;
    options.start = start;
    options.wait = milliseconds(0);
    auto consumer = Consumer::open(connection, "s", options);
    REQUIRE(consumer.ok());
    auto entries = (*consumer)->poll();
    REQUIRE(entries.ok());
    return entries->empty() ? -1 : static_cast<int64_t>(entries->front().offset);
  };
  CHECK(first_offset(StartPosition::earliest()) == 0);
  CHECK(first_offset(StartPosition::latest()) == -1);
  CHECK(first_offset(StartPosition::at_offset(3)) == 3);
  // The fake's clock starts at 1 s and adds 1 ms per append: the third append is at 1.003 s.
  CHECK(first_offset(StartPosition::at_time(1'003'000)) == 2);
}

TEST_CASE("a group resumes where it committed, a group without commits starts where told") {
  FakeLog log;
  log.create("s", 2);
  Connection connection(consumer_options(log.port()));
  fill(connection, 2, 4);
  ConsumerOptions options;
  options.group = "g";
  options.max_records = 3;
  options.wait = milliseconds(0);
  {
    auto consumer = Consumer::open(connection, "s", options);
    REQUIRE(consumer.ok());
    REQUIRE((*consumer)->poll().ok());
    REQUIRE((*consumer)->commit().ok());
  }
  Admin admin(connection);
  CHECK(admin.committed("s", "g", 0).value() == 3);
  CHECK(admin.committed("s", "g", 1).value() == 3);
  options.start = StartPosition::latest();
  auto resumed = Consumer::open(connection, "s", options);
  REQUIRE(resumed.ok());
  auto entries = (*resumed)->poll();
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 2);
  CHECK((*entries)[0].offset == 3);
  CHECK((*entries)[1].offset == 3);

  options.group = "other";
  auto fresh = Consumer::open(connection, "s", options);
  REQUIRE(fresh.ok());
  CHECK((*fresh)->position(0) == 4);
}

TEST_CASE("pause leaves a partition out, seek rewinds it, a per-partition error names the partition") {
  FakeLog log;
  log.create("s", 2);
  Connection connection(consumer_options(log.port()));
  fill(connection, 2, 3);
  ConsumerOptions options;
  options.wait = milliseconds(0);
  auto consumer = Consumer::open(connection, "s", options);
  REQUIRE(consumer.ok());
  Consumer& c = **consumer;
  c.pause(0);
  auto entries = c.poll();
  REQUIRE(entries.ok());
  for (const Entry& e : *entries) CHECK(e.partition == 1);
  c.resume(0);
  c.seek(1, 1);
  entries = c.poll();
  REQUIRE(entries.ok());
  CHECK(entries->size() == 5);
  c.seek(1, 99);
  auto ahead = c.poll();
  REQUIRE_FALSE(ahead.ok());
  CHECK(ahead.error().is(ErrorCode::kOffsetAhead));
  CHECK(ahead.error().field("partition") == "1");
  CHECK(c.position(0) == 3);
  CHECK(c.commit().error().is(ErrorCode::kStreamMisconfigured));
}

}  // namespace
}  // namespace streamd::client
