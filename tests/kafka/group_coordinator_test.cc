// server/kafka/group_coordinator.h: the classic group protocol's states, driven by a manual
// scheduler (no sleeps): joins, the leader's assignment relayed by SyncGroup, heartbeats during a
// rebalance, session expiry, the rebalance timeout, leaving, and the OffsetCommit rules.
#include "server/kafka/group_coordinator.h"

#include <catch2/catch.hpp>

#include "tests/broker/manual_scheduler.h"

namespace streamd::kafka {
namespace {

using std::chrono::milliseconds;

struct CoordinatorFixture {
  streamd::testing::ManualScheduler timers;
  GroupCoordinator groups{timers};

  JoinRequest request(const std::string& member, bool v4 = false) {
    JoinRequest r;
    r.group_id = "g";
    r.member_id = member;
    r.session_timeout = milliseconds(10000);
    r.rebalance_timeout = milliseconds(30000);
    r.protocol_type = "consumer";
    r.protocols = {{"range", "meta-" + member}, {"roundrobin", "rr"}};
    r.client_id = "client";
    r.require_known_member_id = v4;
    return r;
  }

  // Joins; the slot fills whenever the answer comes (at once, or when the rebalance completes).
  using Slot = std::shared_ptr<std::optional<JoinResult>>;
  Slot join(const JoinRequest& r) {
    auto slot = std::make_shared<std::optional<JoinResult>>();
    groups.join(r, [slot](const JoinResult& result) { *slot = result; });
    return slot;
  }

  SyncResult sync_now(int32_t generation, const std::string& member, std::vector<Assignment> a = {}) {
    std::optional<SyncResult> out;
    groups.sync("g", generation, member, std::move(a), [&](const SyncResult& s) { out = s; });
    REQUIRE(out.has_value());
    return *out;
  }
};

TEST_CASE("JoinGroup v4+ first answers MEMBER_ID_REQUIRED, v0-3 joins at once") {
  CoordinatorFixture f;
  auto first = *f.join(f.request("", true));
  REQUIRE(first);
  CHECK(first->error == Error::kMemberIdRequired);
  REQUIRE_FALSE(first->member_id.empty());
  auto joined = *f.join(f.request(first->member_id, true));
  REQUIRE(joined);
  CHECK(joined->error == Error::kNone);
  CHECK(joined->generation == 1);
  CHECK(joined->leader == first->member_id);
  CHECK(joined->protocol == "range");
  REQUIRE(joined->members.size() == 1);
  CHECK(joined->members[0].metadata == "meta-" + first->member_id);

  CoordinatorFixture old;
  auto v0 = *old.join(old.request(""));
  REQUIRE(v0);
  CHECK(v0->error == Error::kNone);
  CHECK_FALSE(v0->member_id.empty());
}

TEST_CASE("an unknown member id or a bad session timeout is refused") {
  CoordinatorFixture f;
  CHECK((*f.join(f.request("nobody")))->error == Error::kUnknownMemberId);
  auto r = f.request("");
  r.session_timeout = milliseconds(10);
  CHECK((*f.join(r))->error == Error::kInvalidSessionTimeout);
  r = f.request("");
  r.group_id.clear();
  CHECK((*f.join(r))->error == Error::kInvalidGroupId);
}

TEST_CASE("the leader's assignment reaches every member through SyncGroup") {
  CoordinatorFixture f;
  auto a = **f.join(f.request(""));
  REQUIRE(f.sync_now(1, a.member_id, {{a.member_id, "all"}}).assignment == "all");
  CHECK(f.groups.describe("g")->state == "Stable");

  // A second member joins: the group rebalances, and the first learns of it by heartbeat.
  auto b_slot = f.join(f.request(""));
  CHECK_FALSE(b_slot->has_value());
  CHECK(f.groups.describe("g")->state == "PreparingRebalance");
  CHECK(f.groups.heartbeat("g", 1, a.member_id) == Error::kRebalanceInProgress);
  CHECK(f.groups.check_commit("g", 1, a.member_id) == Error::kRebalanceInProgress);

  // a's rejoin completes the rebalance: every member is in.
  auto a_join = *f.join(f.request(a.member_id));
  REQUIRE(a_join);
  auto b_join = *b_slot;
  REQUIRE(b_join);
  CHECK(a_join->generation == 2);
  CHECK(b_join->generation == 2);
  CHECK(a_join->leader == a.member_id);  // the leader stays
  CHECK(a_join->members.size() == 2);
  CHECK(b_join->members.empty());  // followers get no member list
  CHECK(f.groups.describe("g")->state == "CompletingRebalance");

  // The follower's SyncGroup waits for the leader's.
  std::optional<SyncResult> b_sync;
  f.groups.sync("g", 2, b_join->member_id, {}, [&](const SyncResult& s) { b_sync = s; });
  CHECK_FALSE(b_sync.has_value());
  auto a_sync = f.sync_now(2, a.member_id, {{a.member_id, "p0"}, {b_join->member_id, "p1"}});
  CHECK(a_sync.assignment == "p0");
  REQUIRE(b_sync);
  CHECK(b_sync->error == Error::kNone);
  CHECK(b_sync->assignment == "p1");
  CHECK(f.groups.describe("g")->state == "Stable");
  CHECK(f.groups.heartbeat("g", 2, b_join->member_id) == Error::kNone);
  CHECK(f.groups.heartbeat("g", 1, b_join->member_id) == Error::kIllegalGeneration);
  CHECK(f.groups.check_commit("g", 2, a.member_id) == Error::kNone);
  CHECK(f.groups.check_commit("g", 1, a.member_id) == Error::kIllegalGeneration);
}

TEST_CASE("a member silent for its session timeout is removed and the group rebalances") {
  CoordinatorFixture f;
  auto a = **f.join(f.request(""));
  f.sync_now(1, a.member_id, {{a.member_id, "x"}});
  auto b_slot = f.join(f.request(""));
  f.join(f.request(a.member_id));
  REQUIRE(b_slot->has_value());
  const std::string b = (*b_slot)->member_id;
  f.sync_now(2, a.member_id, {});
  f.sync_now(2, b, {});
  // b keeps heartbeating; a goes silent past its 10 s session.
  for (int i = 0; i < 4; ++i) {
    f.timers.advance(milliseconds(3000));
    f.groups.heartbeat("g", 2, b);
  }
  auto d = f.groups.describe("g");
  REQUIRE(d);
  CHECK(d->state == "PreparingRebalance");
  REQUIRE(d->members.size() == 1);
  CHECK(d->members[0].member_id == b);
  CHECK(f.groups.heartbeat("g", 2, b) == Error::kRebalanceInProgress);
  // b rejoins and leads generation 3 alone.
  auto b3 = *f.join(f.request(b));
  REQUIRE(b3);
  CHECK(b3->generation == 3);
  CHECK(b3->leader == b);
}

TEST_CASE("members that do not rejoin within the rebalance timeout are dropped") {
  CoordinatorFixture f;
  auto a = **f.join(f.request(""));
  f.sync_now(1, a.member_id, {});
  auto b = f.join(f.request(""));
  CHECK_FALSE(b->has_value());
  // a heartbeats (so its session stays alive) but never rejoins; the rebalance timeout is 30 s.
  for (int i = 0; i < 12 && !b->has_value(); ++i) {
    f.timers.advance(milliseconds(3000));
    f.groups.heartbeat("g", 1, a.member_id);
  }
  REQUIRE(b->has_value());
  CHECK((*b)->error == Error::kNone);
  CHECK((*b)->generation == 2);
  CHECK((*b)->leader == (*b)->member_id);
  CHECK(f.groups.describe("g")->members.size() == 1);
  CHECK(f.groups.heartbeat("g", 2, a.member_id) == Error::kUnknownMemberId);
}

TEST_CASE("LeaveGroup removes a member, the last one leaves the group Empty") {
  CoordinatorFixture f;
  auto a = **f.join(f.request(""));
  f.sync_now(1, a.member_id, {});
  CHECK(f.groups.leave("g", "nobody") == Error::kUnknownMemberId);
  CHECK(f.groups.leave("g", a.member_id) == Error::kNone);
  CHECK(f.groups.describe("g")->state == "Empty");
  CHECK(f.groups.describe("g")->members.empty());
  f.timers.advance(milliseconds(60000));  // no timer of the gone member fires into anything
}

TEST_CASE("simple commits (generation -1, no member) are allowed only while the group has no members") {
  CoordinatorFixture f;
  CHECK(f.groups.check_commit("fresh", -1, "") == Error::kNone);
  auto a = **f.join(f.request(""));
  CHECK(f.groups.check_commit("g", -1, "") == Error::kUnknownMemberId);
  CHECK(f.groups.check_commit("g", 1, "someone") == Error::kUnknownMemberId);
  f.groups.leave("g", a.member_id);
  CHECK(f.groups.check_commit("g", -1, "") == Error::kNone);
}

TEST_CASE("a member whose protocols share nothing with the group is refused") {
  CoordinatorFixture f;
  f.join(f.request(""));
  auto r = f.request("");
  r.protocols = {{"sticky", "s"}};
  CHECK((*f.join(r))->error == Error::kInconsistentGroupProtocol);
  r = f.request("");
  r.protocol_type = "connect";
  CHECK((*f.join(r))->error == Error::kInconsistentGroupProtocol);
}

TEST_CASE("close stops every timer") {
  CoordinatorFixture f;
  f.join(f.request(""));
  f.join(f.request(""));
  f.groups.close();
  f.timers.advance(milliseconds(120000));
  CHECK(f.groups.list().empty());
}

TEST_CASE("a static member joins without MEMBER_ID_REQUIRED and is described with its instance id") {
  CoordinatorFixture f;
  JoinRequest r = f.request("", true);
  r.instance_id = "svc-1";
  auto joined = *f.join(r);
  REQUIRE(joined);
  CHECK(joined->error == Error::kNone);
  CHECK(joined->members.size() == 1);
  CHECK(joined->members[0].instance_id == "svc-1");
  auto d = f.groups.describe("g");
  REQUIRE(d);
  REQUIRE(d->members.size() == 1);
  CHECK(d->members[0].instance_id == "svc-1");
}

TEST_CASE("a restarted static member gets its assignment back without a rebalance, the old id is fenced") {
  CoordinatorFixture f;
  JoinRequest ra = f.request("");
  ra.instance_id = "instance-a";
  JoinRequest rb = f.request("");
  rb.instance_id = "instance-b";
  auto a = *f.join(ra);
  REQUIRE(a);
  const std::string a_id = a->member_id;
  auto b = f.join(rb);  // a rebalance: a must rejoin
  ra.member_id = a_id;
  auto a2 = f.join(ra);
  REQUIRE(*b);
  REQUIRE(*a2);
  const std::string b_id = (*b)->member_id;
  const int32_t gen = (*a2)->generation;
  const std::string leader = (*a2)->leader;
  const std::string follower = leader == a_id ? b_id : a_id;
  // The leader brings the assignments; both get theirs.
  std::optional<SyncResult> follower_sync;
  f.groups.sync("g", gen, follower, {}, [&](const SyncResult& s) { follower_sync = s; });
  CHECK(f.sync_now(gen, leader, {{a_id, "parts-of-a"}, {b_id, "parts-of-b"}}).error == Error::kNone);
  REQUIRE(follower_sync);
  CHECK(f.groups.describe("g")->state == "Stable");

  // b restarts: it joins with its instance id and no member id.
  rb.member_id.clear();
  auto b_again = *f.join(rb);
  REQUIRE(b_again);  // answered at once: no rebalance
  CHECK(b_again->error == Error::kNone);
  CHECK(b_again->generation == gen);
  CHECK(b_again->member_id != b_id);
  CHECK(f.groups.describe("g")->state == "Stable");
  CHECK(f.sync_now(gen, b_again->member_id).assignment == "parts-of-b");
  // a noticed nothing: its heartbeat is fine in the same generation.
  CHECK(f.groups.heartbeat("g", gen, a_id, "instance-a") == Error::kNone);
  // The old incarnation of b is fenced wherever it names its instance.
  CHECK(f.groups.heartbeat("g", gen, b_id, "instance-b") == Error::kFencedInstanceId);
  CHECK(f.groups.check_commit("g", gen, b_id, "instance-b") == Error::kFencedInstanceId);
  rb.member_id = b_id;
  auto stale = *f.join(rb);
  REQUIRE(stale);
  CHECK(stale->error == Error::kFencedInstanceId);
  CHECK(f.groups.leave("g", b_id, "instance-b") == Error::kFencedInstanceId);
  CHECK(f.groups.describe("g")->members.size() == 2);
}

TEST_CASE("a static member's session timeout still removes it, and its instance joins anew after") {
  CoordinatorFixture f;
  JoinRequest r = f.request("");
  r.instance_id = "svc";
  auto first = *f.join(r);
  REQUIRE(first);
  CHECK(f.sync_now(first->generation, first->member_id, {{first->member_id, "x"}}).error == Error::kNone);
  f.timers.advance(milliseconds(10001));
  CHECK(f.groups.describe("g")->members.empty());
  CHECK(f.groups.describe("g")->state == "Empty");
  auto again = *f.join(r);
  REQUIRE(again);
  CHECK(again->error == Error::kNone);
  CHECK(again->generation > first->generation);
}

TEST_CASE("LeaveGroup by instance id removes the static member and starts a rebalance") {
  CoordinatorFixture f;
  JoinRequest r = f.request("");
  r.instance_id = "svc";
  auto joined = *f.join(r);
  REQUIRE(joined);
  CHECK(f.groups.leave("g", "", "unknown-instance") == Error::kUnknownMemberId);
  CHECK(f.groups.leave("g", "", "svc") == Error::kNone);
  CHECK(f.groups.describe("g")->members.empty());
}

TEST_CASE("remove_empty refuses a group with members and forgets an empty one") {
  CoordinatorFixture f;
  auto joined = *f.join(f.request(""));
  REQUIRE(joined);
  bool existed = false;
  CHECK(f.groups.remove_empty("g", &existed) == Error::kNonEmptyGroup);
  CHECK(existed);
  CHECK(f.groups.leave("g", joined->member_id) == Error::kNone);
  CHECK(f.groups.remove_empty("g", &existed) == Error::kNone);
  CHECK(existed);
  CHECK_FALSE(f.groups.describe("g").has_value());
  CHECK(f.groups.remove_empty("g", &existed) == Error::kNone);
  CHECK_FALSE(existed);
}

}  // namespace
}  // namespace streamd::kafka
