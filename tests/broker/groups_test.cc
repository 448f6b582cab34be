// Commit, Committed and ListGroups (docs/SEMANTICS.md §7) through the broker.
#include <catch2/catch.hpp>
#include <future>

#include "server/storage/group_offsets.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::BrokerFixture;
using testing::check_error;

struct GroupsFixture : BrokerFixture {
  explicit GroupsFixture(testing::TestEngine kind = testing::TestEngine::kFile) : BrokerFixture(kind) {
    Policy policy;
    policy.partitions = 2;
    create("s", policy);
    append("s", {{"", "a"}, {"", "b"}, {"", "c"}, {"", "d"}});  // partition 0: 0..3
    append("s", {{"", "e"}});                                   // partition 1: 0
  }
  Offset committed(const std::string& group, int32_t p) {
    auto c = broker->committed("s", group, PartitionId(p));
    INFO(c.status().to_string());
    REQUIRE(c.ok());
    return *c;
  }
};

ENGINE_TEST_CASE("a group that never committed on a partition is UNKNOWN_GROUP, never a zero offset") {
  GroupsFixture f(TestType::kEngine);
  check_error(f.broker->committed("s", "g", PartitionId(0)).status(), Code::kUnknownGroup,
              {{"stream", "s"}, {"group", "g"}, {"partition", "0"}});
  REQUIRE(f.commit("s", "g", 0, 2).ok());
  check_error(f.broker->committed("s", "g", PartitionId(1)).status(), Code::kUnknownGroup, {{"partition", "1"}});
}

ENGINE_TEST_CASE("commit replaces the offset: moving back is a replay and allowed, next itself is allowed") {
  GroupsFixture f(TestType::kEngine);
  for (uint64_t next : {2u, 4u, 0u, 3u}) {
    REQUIRE(f.commit("s", "g", 0, next).ok());
    CHECK(f.committed("g", 0) == Offset(next));
  }
}

ENGINE_TEST_CASE("a commit past next is OFFSET_AHEAD with both offsets, and changes nothing") {
  GroupsFixture f(TestType::kEngine);
  REQUIRE(f.commit("s", "g", 0, 1).ok());
  check_error(f.commit("s", "g", 0, 5), Code::kOffsetAhead,
              {{"stream", "s"}, {"partition", "0"}, {"group", "g"}, {"requested", "5"}, {"next", "4"}});
  CHECK(f.committed("g", 0) == Offset(1));
}

ENGINE_TEST_CASE("a commit below first is kept, and reading from it reports OFFSET_TRIMMED") {
  GroupsFixture f(TestType::kEngine);
  REQUIRE(f.broker->trim("s", PartitionId(0), Offset(3)).ok());
  REQUIRE(f.commit("s", "g", 0, 1).ok());
  const Offset at = f.committed("g", 0);
  CHECK(at == Offset(1));
  auto r = f.broker->read("s", {{PartitionId(0), at}}, 10, 0);
  REQUIRE(r.ok());
  check_error((*r)[0].status, Code::kOffsetTrimmed, {{"requested", "1"}, {"first", "3"}});
}

ENGINE_TEST_CASE("commit and committed refuse an empty group, an overlong one and an unknown partition") {
  GroupsFixture f(TestType::kEngine);
  check_error(f.commit("s", "", 0, 0), Code::kStreamMisconfigured, {{"stream", "s"}, {"field", "group"}});
  check_error(f.broker->committed("s", "", PartitionId(0)).status(), Code::kStreamMisconfigured, {{"field", "group"}});
  check_error(f.commit("s", std::string(kMaxGroupNameBytes + 1, 'g'), 0, 0), Code::kStreamMisconfigured,
              {{"field", "group"}, {"length", std::to_string(kMaxGroupNameBytes + 1)}});
  check_error(f.commit("s", "g", 2, 0), Code::kUnknownPartition,
              {{"stream", "s"}, {"partition", "2"}, {"partitions", "2"}});
  check_error(f.broker->committed("s", "g", PartitionId(-1)).status(), Code::kUnknownPartition, {{"partition", "-1"}});
}

ENGINE_TEST_CASE("list_groups gives every group's committed offset, next and lag per partition") {
  GroupsFixture f(TestType::kEngine);
  REQUIRE(f.commit("s", "b", 0, 1).ok());
  REQUIRE(f.commit("s", "a", 1, 1).ok());
  REQUIRE(f.commit("s", "a", 0, 4).ok());
  auto groups = f.broker->list_groups("s");
  REQUIRE(groups.ok());
  REQUIRE(groups->size() == 3);
  struct Want {
    std::string group;
    int32_t partition;
    uint64_t committed, next, lag;
  };
  const std::vector<Want> want{{"a", 0, 4, 4, 0}, {"a", 1, 1, 1, 0}, {"b", 0, 1, 4, 3}};
  for (size_t i = 0; i < want.size(); ++i) {
    const GroupOffset& g = (*groups)[i];
    INFO(i);
    CHECK(g.group == want[i].group);
    CHECK(g.partition == PartitionId(want[i].partition));
    CHECK(g.committed == Offset(want[i].committed));
    CHECK(g.next == Offset(want[i].next));
    CHECK(g.lag == want[i].lag);
  }
  f.append("s", {{"", "more"}});  // rotation: partition 0 again
  CHECK(f.broker->list_groups("s")->at(0).lag == 1);
}

TEST_CASE("commits survive a reopen") {
  GroupsFixture f;
  REQUIRE(f.commit("s", "g", 0, 3).ok());
  REQUIRE(f.commit("s", "g", 1, 1).ok());
  f.reopen();
  CHECK(f.committed("g", 0) == Offset(3));
  CHECK(f.committed("g", 1) == Offset(1));
}

Status store(BrokerFixture& f, const std::string& group, int32_t p, uint64_t next, std::string metadata) {
  std::promise<Status> done;
  f.broker->store_offset("s", group, PartitionId(p), Offset(next), std::move(metadata),
                         [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

Status forget(BrokerFixture& f, const std::string& group, int32_t p) {
  std::promise<Status> done;
  f.broker->forget_offset("s", group, PartitionId(p), [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

ENGINE_TEST_CASE("a stored offset keeps its metadata and is never checked against the log") {
  GroupsFixture f(TestType::kEngine);
  // Past next (4) and on a partition with one record: Kafka's commit takes both.
  REQUIRE(store(f, "g", 0, 42, "meta \x01 data").ok());
  REQUIRE(store(f, "g", 1, 0, "").ok());
  auto kept = f.broker->commit_of("s", "g", PartitionId(0));
  REQUIRE(kept.ok());
  REQUIRE(kept->has_value());
  CHECK((*kept)->committed == Offset(42));
  CHECK((*kept)->metadata == "meta \x01 data");
  CHECK((*kept)->lag == 0);
  CHECK(f.committed("g", 0) == Offset(42));  // the native view shows the same offset
  // A native commit replaces it, and its metadata with it.
  REQUIRE(f.commit("s", "g", 0, 2).ok());
  kept = f.broker->commit_of("s", "g", PartitionId(0));
  REQUIRE(kept.ok());
  CHECK((*kept)->committed == Offset(2));
  CHECK((*kept)->metadata.empty());
  auto listed = f.broker->list_groups("s");
  REQUIRE(listed.ok());
  CHECK(listed->size() == 2);
}

ENGINE_TEST_CASE("stored metadata over its limit, an empty group or an unknown partition is refused, nothing kept") {
  GroupsFixture f(TestType::kEngine);
  check_error(store(f, "g", 0, 1, std::string(kMaxCommitMetadataBytes + 1, 'm')), Code::kStreamMisconfigured,
              {{"field", "metadata"}, {"length", std::to_string(kMaxCommitMetadataBytes + 1)}});
  check_error(store(f, "", 0, 1, ""), Code::kStreamMisconfigured, {{"field", "group"}});
  check_error(store(f, "g", 7, 1, ""), Code::kUnknownPartition, {});
  REQUIRE(store(f, "g", 0, 1, std::string(kMaxCommitMetadataBytes, 'm')).ok());
  auto none = f.broker->commit_of("s", "h", PartitionId(0));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

ENGINE_TEST_CASE("a forgotten offset is gone from committed and list_groups, the group's others stay") {
  GroupsFixture f(TestType::kEngine);
  REQUIRE(store(f, "g", 0, 3, "m").ok());
  REQUIRE(store(f, "g", 1, 1, "").ok());
  REQUIRE(forget(f, "g", 0).ok());
  REQUIRE(forget(f, "never", 0).ok());  // nothing to forget is no error
  check_error(f.broker->committed("s", "g", PartitionId(0)).status(), Code::kUnknownGroup, {});
  CHECK(f.committed("g", 1) == Offset(1));
  auto listed = f.broker->list_groups("s");
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().partition == PartitionId(1));
  // A later commit brings it back.
  REQUIRE(store(f, "g", 0, 2, "again").ok());
  CHECK(f.committed("g", 0) == Offset(2));
}

TEST_CASE("metadata and forgets survive a reopen") {
  GroupsFixture f;
  REQUIRE(store(f, "g", 0, 9, "kept across").ok());
  REQUIRE(store(f, "g", 1, 1, "").ok());
  REQUIRE(forget(f, "g", 1).ok());
  f.reopen();
  auto kept = f.broker->commit_of("s", "g", PartitionId(0));
  REQUIRE(kept.ok());
  REQUIRE(kept->has_value());
  CHECK((*kept)->metadata == "kept across");
  CHECK((*kept)->committed == Offset(9));
  check_error(f.broker->committed("s", "g", PartitionId(1)).status(), Code::kUnknownGroup, {});
}

ENGINE_TEST_CASE("a deleted stream takes its groups with it") {
  GroupsFixture f(TestType::kEngine);
  REQUIRE(f.commit("s", "g", 0, 3).ok());
  REQUIRE(f.broker->delete_stream("s").ok());
  f.create("s");
  check_error(f.broker->committed("s", "g", PartitionId(0)).status(), Code::kUnknownGroup, {});
}

}  // namespace
}  // namespace streamd
