// The stream catalogue: CreateStream, DeleteStream, ListStreams, DescribeStream, auto-create, reopen.
#include "server/broker/broker.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>

#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::BrokerFixture;
using testing::check_error;

ENGINE_TEST_CASE("create returns the description: normalized policy, creation time, empty partitions") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.partitions = 3;
  policy.retain_for = std::chrono::hours(1);
  bool created = false;
  auto d = f.broker->create_stream("orders", policy, false, &created);
  REQUIRE(d.ok());
  CHECK(created);
  CHECK(d->name == "orders");
  CHECK(d->policy == policy.normalized());
  CHECK(d->created_at == f.clock.now());
  REQUIRE(d->partitions.size() == 3);
  for (int32_t p = 0; p < 3; ++p) {
    CHECK(d->partitions[static_cast<size_t>(p)].partition == PartitionId(p));
    CHECK(d->partitions[static_cast<size_t>(p)].bounds == Bounds{});
    CHECK(d->partitions[static_cast<size_t>(p)].bytes == 0);
    CHECK(d->partitions[static_cast<size_t>(p)].segments == 1);
  }
}

ENGINE_TEST_CASE("create refuses an existing stream unless if_not_exists") {
  BrokerFixture f(TestType::kEngine);
  f.create("s");
  check_error(f.broker->create_stream("s", Policy{}, false).status(), Code::kStreamExists, {{"stream", "s"}});
  bool created = true;
  auto again = f.broker->create_stream("s", Policy{}, true, &created);
  REQUIRE(again.ok());
  CHECK_FALSE(created);
  CHECK(again->name == "s");
}

ENGINE_TEST_CASE("create validates the policy by field, before anything else") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.block_timeout = std::chrono::milliseconds(5);
  check_error(f.broker->create_stream("s", policy, true).status(), Code::kStreamMisconfigured,
              {{"field", "block_timeout"}});
  CHECK(f.broker->stream_count() == 0);
}

ENGINE_TEST_CASE("every operation refuses a malformed stream name with STREAM_MISCONFIGURED field=name") {
  BrokerFixture f(TestType::kEngine);
  const std::string bad = "../etc";
  check_error(f.broker->create_stream(bad, Policy{}, false).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.broker->delete_stream(bad), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.broker->describe_stream(bad).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.try_append(bad, {{"", "x"}}).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.broker->read(bad, {}, 1, 0).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.broker->bounds(bad, PartitionId(0)).status(), Code::kStreamMisconfigured, {{"field", "name"}});
  check_error(f.commit(bad, "g", 0, 0), Code::kStreamMisconfigured, {{"field", "name"}});
  CHECK(f.broker->stream_count() == 0);
}

ENGINE_TEST_CASE("an absent stream is STREAM_NOT_FOUND for every operation but append with auto-create") {
  BrokerOptions options = BrokerFixture::default_options();
  options.auto_create_streams = false;
  BrokerFixture f(TestType::kEngine, options);
  const Fields fields{{"stream", "nope"}};
  check_error(f.broker->describe_stream("nope").status(), Code::kStreamNotFound, fields);
  check_error(f.broker->delete_stream("nope"), Code::kStreamNotFound, fields);
  check_error(f.try_append("nope", {{"", "x"}}).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->read("nope", {}, 1, 0).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->bounds("nope", PartitionId(0)).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->peek("nope", PartitionId(0)).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->offset_at("nope", PartitionId(0), Timestamp()).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->trim("nope", PartitionId(0), Offset()).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->compact("nope", PartitionId(0)).status(), Code::kStreamNotFound, fields);
  check_error(f.commit("nope", "g", 0, 0), Code::kStreamNotFound, fields);
  check_error(f.broker->committed("nope", "g", PartitionId(0)).status(), Code::kStreamNotFound, fields);
  check_error(f.broker->list_groups("nope").status(), Code::kStreamNotFound, fields);
  check_error(f.broker->watch("nope", {}, [] {}).status(), Code::kStreamNotFound, fields);
  bool deleted = true;
  CHECK(f.broker->delete_stream("nope", true, &deleted).ok());
  CHECK_FALSE(deleted);
}

ENGINE_TEST_CASE("the first append to an absent stream creates it with the default policy") {
  BrokerOptions options = BrokerFixture::default_options();
  options.default_policy.partitions = 2;
  BrokerFixture f(TestType::kEngine, options);
  auto r = f.append("auto", {{"", "x"}});
  CHECK(r.range == AppendRange{Offset(0), Offset(0)});
  auto d = f.broker->describe_stream("auto");
  REQUIRE(d.ok());
  CHECK(d->policy == options.default_policy.normalized());
}

ENGINE_TEST_CASE("appends sent while auto-create runs take offsets in the order they were sent") {
  BrokerFixture f(TestType::kEngine);
  constexpr int kAppends = 200;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Result<AppendResult>>> results(kAppends);
  int done = 0;
  for (int i = 0; i < kAppends; ++i) {
    std::string payload = std::to_string(i);
    f.broker->append("fresh", {RecordInput{"", payload, {}}}, [&, i](Result<AppendResult> r) {
      std::lock_guard lock(mu);
      results[static_cast<size_t>(i)].emplace(std::move(r));
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done == kAppends; });
  for (int i = 0; i < kAppends; ++i) {
    INFO("append " << i);
    REQUIRE(results[static_cast<size_t>(i)]->ok());
    CHECK((*results[static_cast<size_t>(i)])->range.first == Offset(static_cast<uint64_t>(i)));
  }
}

ENGINE_TEST_CASE("an append auto-create would refuse creates nothing") {
  BrokerOptions options = BrokerFixture::default_options();
  options.default_policy.max_record_bytes = 10;
  BrokerFixture f(TestType::kEngine, options);
  check_error(f.try_append("auto", {}).status(), Code::kInvalidBatchSize, {});
  check_error(f.try_append("auto", {{"", std::string(11, 'x')}}).status(), Code::kRecordTooLarge, {{"index", "0"}});
  CHECK(f.broker->stream_count() == 0);
}

ENGINE_TEST_CASE("a create past max_partitions is refused before anything is made, a delete makes room") {
  BrokerOptions options = BrokerFixture::default_options();
  options.max_partitions = 5;
  BrokerFixture f(TestType::kEngine, options);
  Policy three;
  three.partitions = 3;
  f.create("a", three);
  check_error(f.broker->create_stream("b", three, false).status(), Code::kStreamMisconfigured,
              {{"field", "partitions"}, {"value", "3"}, {"held", "3"}, {"max_partitions", "5"}});
  Policy huge;
  huge.partitions = 2000000000;
  check_error(f.broker->create_stream("b", huge, false).status(), Code::kStreamMisconfigured,
              {{"field", "partitions"}, {"value", "2000000000"}});
  CHECK(f.broker->stream_count() == 1);

  Policy two;
  two.partitions = 2;
  f.create("b", two);  // exactly at the limit
  check_error(f.try_append("auto", {{"", "x"}}).status(), Code::kStreamMisconfigured, {{"field", "partitions"}});
  CHECK(f.broker->stream_count() == 2);

  REQUIRE(f.broker->delete_stream("a", false).ok());
  f.append("auto", {{"", "x"}});
  CHECK(f.broker->stream_count() == 2);
}

TEST_CASE("a default policy over max_partitions is refused at open") {
  testing::TempDir dir;
  ThreadPool pool(1);
  ManualClock clock;
  testing::ManualScheduler scheduler;
  BrokerOptions options;
  options.max_partitions = 4;
  options.default_policy.partitions = 5;
  auto opened = Broker::open(posix_file_system(), dir.path(), options, pool, clock, scheduler);
  check_error(opened.status(), Code::kStreamMisconfigured,
              {{"field", "partitions"}, {"policy", "default"}, {"max_partitions", "4"}});
}

ENGINE_TEST_CASE("list names every stream with its partition count, ordered") {
  BrokerFixture f(TestType::kEngine);
  Policy two;
  two.partitions = 2;
  f.create("b", two);
  f.create("a");
  auto list = f.broker->list_streams();
  REQUIRE(list.size() == 2);
  CHECK(list[0].name == "a");
  CHECK(list[0].partitions == 1);
  CHECK(list[1].name == "b");
  CHECK(list[1].partitions == 2);
}

ENGINE_TEST_CASE("describe reports bounds, bytes and segments per partition") {
  BrokerFixture f(TestType::kEngine);
  Policy policy;
  policy.segment_bytes = 100;
  f.create("s", policy);
  for (int i = 0; i < 3; ++i) f.append("s", {{"", std::string(80, 'x')}});
  auto d = f.broker->describe_stream("s");
  REQUIRE(d.ok());
  CHECK(d->partitions[0].bounds == Bounds{Offset(0), Offset(3)});
  CHECK(d->partitions[0].segments == 3);
  CHECK(d->partitions[0].bytes > 3 * 80);
}

ENGINE_TEST_CASE("delete is final: afterwards no read or append sees the stream, and the name is free") {
  BrokerOptions options = BrokerFixture::default_options();
  options.auto_create_streams = false;
  BrokerFixture f(TestType::kEngine, options);
  f.create("s");
  f.append("s", {{"", "before"}});
  bool deleted = false;
  REQUIRE(f.broker->delete_stream("s", false, &deleted).ok());
  CHECK(deleted);
  check_error(f.broker->read("s", {{PartitionId(0), Offset(0)}}, 1, 0).status(), Code::kStreamNotFound, {});
  check_error(f.try_append("s", {{"", "after"}}).status(), Code::kStreamNotFound, {});
  CHECK(f.broker->list_streams().empty());
  if (TestType::kEngine == testing::TestEngine::kFile) CHECK(std::filesystem::is_empty(f.dir.file("streams")));
  f.create("s");
  CHECK(f.read("s", 0).empty());
  if (TestType::kEngine == testing::TestEngine::kFile) {
    f.reopen();
    CHECK(f.broker->stream_count() == 1);
    CHECK(f.read("s", 0).empty());
  }
}

TEST_CASE("streams and their records survive a reopen") {
  BrokerFixture f;
  Policy policy;
  policy.partitions = 2;
  f.create("s", policy);
  f.append("s", {{"", "a"}});
  f.append("s", {{"", "b"}});
  f.reopen();
  CHECK(f.read("s", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "a"}});
  CHECK(f.read("s", 1) == std::vector<std::pair<uint64_t, std::string>>{{0, "b"}});
}

TEST_CASE("a second broker on the same data directory is refused") {
  BrokerFixture f;
  ThreadPool pool(1);
  auto second = Broker::open(posix_file_system(), f.dir.path(), BrokerFixture::default_options(), pool, f.clock,
                             f.scheduler);
  check_error(second.status(), Code::kStreamDirectoryUnusable, {{"path", f.dir.path()}});
}

TEST_CASE("a bad default policy is refused at open") {
  testing::TempDir dir;
  ThreadPool pool(1);
  ManualClock clock;
  testing::ManualScheduler scheduler;
  BrokerOptions options;
  options.default_policy.partitions = -1;
  auto opened = Broker::open(posix_file_system(), dir.path(), options, pool, clock, scheduler);
  check_error(opened.status(), Code::kStreamMisconfigured, {{"field", "partitions"}});
}

}  // namespace
}  // namespace streamd
