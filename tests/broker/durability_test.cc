// Crash cases with the fault-injecting FileSystem: what was answered survives losing every unsynced
// write, and a failed write or sync leaves the old state whole.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/broker/broker_fixture.h"
#include "tests/support/fault_injection_fs.h"

namespace streamd {
namespace {

using std::chrono::seconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::FaultInjectionFileSystem;
using Entries = std::vector<std::pair<uint64_t, std::string>>;

struct CrashFixture {
  CrashFixture() : f(BrokerFixture::default_options(), fs) {}
  // Power loss: the broker is gone (nothing open) and every unsynced write with it.
  void crash_and_reopen() {
    f.close();
    Status dropped = fs.drop_unsynced_data();
    INFO(dropped.to_string());
    REQUIRE(dropped.ok());
    f.open();
  }
  FaultInjectionFileSystem fs;
  BrokerFixture f;
};

TEST_CASE("crash: acknowledged commits survive, a commit whose sync failed is refused and so are later ones") {
  CrashFixture c;
  c.f.create("s");
  c.f.append("s", {{"", "a"}, {"", "b"}, {"", "c"}});
  REQUIRE(c.f.commit("s", "g", 0, 1).ok());
  REQUIRE(c.f.commit("s", "h", 0, 2).ok());

  c.fs.fail_next_sync(EIO, "GROUPS");
  check_error(c.f.commit("s", "g", 0, 3), Code::kStreamBackendFailed, {{"stream", "s"}, {"partition", "0"}});
  check_error(c.f.commit("s", "h", 0, 3), Code::kStreamBackendFailed, {});
  CHECK(c.f.broker->committed("s", "g", PartitionId(0)).value() == Offset(1));

  c.crash_and_reopen();
  CHECK(c.f.broker->committed("s", "g", PartitionId(0)).value() == Offset(1));
  CHECK(c.f.broker->committed("s", "h", PartitionId(0)).value() == Offset(2));
  REQUIRE(c.f.commit("s", "g", 0, 3).ok());  // reopened, the log takes commits again
}

TEST_CASE("crash: many groups committing at once all survive") {
  CrashFixture c;
  c.f.create("s");
  c.f.append("s", {{"", "x"}});
  constexpr int kGroups = 16, kCommits = 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int g = 0; g < kGroups; ++g) {
    threads.emplace_back([&c, &failures, g] {
      for (int i = 0; i < kCommits; ++i) {
        if (!c.f.commit("s", "g" + std::to_string(g), 0, static_cast<uint64_t>(i % 2)).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  c.crash_and_reopen();
  for (int g = 0; g < kGroups; ++g) {
    CHECK(c.f.broker->committed("s", "g" + std::to_string(g), PartitionId(0)).value() == Offset((kCommits - 1) % 2));
  }
}

TEST_CASE("crash: an acknowledged trim survives, a trim whose sync failed changes nothing") {
  CrashFixture c;
  c.f.create("s");
  c.f.append("s", {{"", "a"}, {"", "b"}, {"", "c"}, {"", "d"}});
  REQUIRE(c.f.broker->trim("s", PartitionId(0), Offset(1)).ok());
  c.fs.fail_next_sync(EIO, "first_offset");
  check_error(c.f.broker->trim("s", PartitionId(0), Offset(3)).status(), Code::kStreamBackendFailed,
              {{"stream", "s"}, {"partition", "0"}});
  CHECK(c.f.bounds("s", 0).first == Offset(1));
  c.crash_and_reopen();
  CHECK(c.f.bounds("s", 0) == Bounds{Offset(1), Offset(4)});
  CHECK(c.f.read("s", 0, 1) == Entries{{1, "b"}, {2, "c"}, {3, "d"}});
}

TEST_CASE("crash: a compaction whose swap file fails to sync leaves the old segment, a finished one survives") {
  CrashFixture c;
  Policy policy;
  policy.segment_bytes = 200;
  policy.compact_after = seconds(10);
  c.f.create("s", policy);
  c.f.append("s", {{"k", "1"}});
  c.f.append("s", {{"k", "2"}});
  c.f.clock.advance(seconds(30));
  c.f.append("s", {{"filler", std::string(200, 'f')}});
  const Entries before{{0, "1"}, {1, "2"}, {2, std::string(200, 'f')}};

  c.fs.fail_next_sync(EIO, ".swap");
  check_error(c.f.broker->compact("s", PartitionId(0)).status(), Code::kStreamBackendFailed,
              {{"stream", "s"}, {"partition", "0"}});
  CHECK(c.f.read("s", 0) == before);
  c.crash_and_reopen();
  CHECK(c.f.read("s", 0) == before);

  auto compacted = c.f.broker->compact("s", PartitionId(0));
  REQUIRE(compacted.ok());
  CHECK(compacted->dropped == 1);
  const Entries after{{1, "2"}, {2, std::string(200, 'f')}};
  CHECK(c.f.read("s", 0) == after);
  c.crash_and_reopen();
  CHECK(c.f.read("s", 0) == after);
  CHECK(c.f.bounds("s", 0) == Bounds{Offset(0), Offset(3)});
}

TEST_CASE("crash: a created stream survives, one whose metadata failed to sync was never created") {
  CrashFixture c;
  Policy policy;
  policy.partitions = 3;
  c.f.create("kept", policy);
  c.fs.fail_next_sync(EIO, "STREAM.tmp");
  check_error(c.f.broker->create_stream("lost", Policy{}, false).status(), Code::kStreamBackendFailed, {});
  CHECK(c.f.broker->list_streams().size() == 1);
  c.crash_and_reopen();
  auto list = c.f.broker->list_streams();
  REQUIRE(list.size() == 1);
  CHECK(list[0].name == "kept");
  CHECK(list[0].partitions == 3);
  CHECK(c.f.broker->describe_stream("kept")->policy == policy.normalized());
  CHECK(c.f.broker->create_stream("lost", Policy{}, false).ok());
}

TEST_CASE("crash: a deleted stream stays deleted, its name free") {
  CrashFixture c;
  c.f.create("gone");
  c.f.append("gone", {{"", "x"}});
  REQUIRE(c.f.broker->delete_stream("gone").ok());
  c.crash_and_reopen();
  CHECK(c.f.broker->stream_count() == 0);
  c.f.create("gone");
  CHECK(c.f.read("gone", 0).empty());
}

TEST_CASE("crash: acknowledged appends survive through the broker") {
  CrashFixture c;
  c.f.create("s");
  for (int i = 0; i < 20; ++i) c.f.append("s", {{"", std::to_string(i)}});
  c.crash_and_reopen();
  CHECK(c.f.bounds("s", 0) == Bounds{Offset(0), Offset(20)});
  CHECK(c.f.read("s", 0, 19) == Entries{{19, "19"}});
}

}  // namespace
}  // namespace streamd
