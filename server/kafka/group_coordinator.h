// GroupCoordinator: Kafka's classic consumer-group protocol (docs/KAFKA.md §Groups), for the groups
// of this broker, which coordinates them all. Membership lives in memory only: after a restart
// members rejoin, as they do when a Kafka coordinator moves. Committed offsets are not kept here but
// in the broker's group offsets (offset_apis.cc), the same ones streamctl reads.
//
// A group moves Empty → PreparingRebalance (a member joined, left, changed its protocols or timed
// out) → CompletingRebalance (every known member has rejoined, or the rebalance timeout removed those
// that did not; a new generation is chosen with its protocol and leader, and each member gets its
// JoinGroup answer, the leader with every member's metadata) → Stable (the leader's SyncGroup brought
// the assignments, which every member's SyncGroup returns). A member that sends nothing for its
// session timeout is removed, which starts a rebalance; so does LeaveGroup.
//
// Static membership (KIP-345): a member that joins with a group instance id keeps its place across
// restarts. Joining again with the same instance id and no member id takes the old member's place
// under a new member id — in a Stable group with unchanged protocols without a rebalance, keeping its
// assignment — and fences the old id: a request that names the instance with any other member id is
// FENCED_INSTANCE_ID. Its session timeout still removes it, and LeaveGroup may name it by instance.
//
// Threading: every call, and every callback it makes, runs on one thread (the network loop); the
// Scheduler's timers must call back on that thread too. Tests drive it with a manual scheduler.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/kafka/errors.h"

namespace streamd {
class Scheduler;
}

namespace streamd::kafka {

struct GroupLimits {
  std::chrono::milliseconds min_session_timeout{1000};
  std::chrono::milliseconds max_session_timeout{std::chrono::minutes(30)};
};

struct Protocol {
  std::string name;
  std::string metadata;
};

struct JoinRequest {
  std::string group_id;
  std::string member_id;  // empty: a new member
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
  std::string protocol_type;
  std::vector<Protocol> protocols;
  std::string client_id;
  std::string client_host;
  std::string instance_id;               // group.instance.id (JoinGroup v5+); empty: a dynamic member
  bool require_known_member_id = false;  // JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED
};

struct JoinedMember {
  std::string member_id;
  std::string metadata;
  std::string instance_id;  // empty for a dynamic member
};

struct JoinResult {
  Error error = Error::kNone;
  int32_t generation = -1;
  std::string protocol;
  std::string leader;
  std::string member_id;
  std::vector<JoinedMember> members;  // the leader's answer only
};

struct SyncResult {
  Error error = Error::kNone;
  std::string assignment;
};

struct Assignment {
  std::string member_id;
  std::string assignment;
};

struct GroupListing {
  std::string group_id;
  std::string protocol_type;
  std::string state;
};

struct MemberDescription {
  std::string member_id;
  std::string instance_id;  // empty for a dynamic member
  std::string client_id;
  std::string client_host;
  std::string metadata;
  std::string assignment;
};

struct GroupDescription {
  std::string state;  // "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"
  std::string protocol_type;
  std::string protocol;
  std::vector<MemberDescription> members;
};

class GroupCoordinator {
 public:
  using JoinDone = std::function<void(const JoinResult&)>;
  using SyncDone = std::function<void(const SyncResult&)>;

  GroupCoordinator(Scheduler& timers, GroupLimits limits = {});
  ~GroupCoordinator();
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;

  // Answers now (an error, a known member's unchanged rejoin) or when the rebalance completes.
  void join(const JoinRequest& request, JoinDone done);
  void sync(const std::string& group_id, int32_t generation, const std::string& member_id,
            std::vector<Assignment> assignments, SyncDone done, const std::string& instance_id = {});
  // `instance_id` (empty: none) is the request's group instance id, checked for fencing.
  Error heartbeat(const std::string& group_id, int32_t generation, const std::string& member_id,
                  const std::string& instance_id = {});
  // By member id, or by instance id when one is given (the member id, if any, must then match).
  Error leave(const std::string& group_id, const std::string& member_id, const std::string& instance_id = {});
  // Whether an OffsetCommit from (generation, member) may commit for the group: generation -1 with no
  // member commits only while the group has no members (Kafka's "simple" commits, which assign()
  // users rely on); otherwise the member must be current.
  Error check_commit(const std::string& group_id, int32_t generation, const std::string& member_id,
                     const std::string& instance_id = {});

  // DeleteGroups: NON_EMPTY_GROUP while the group has members; otherwise it is forgotten here (its
  // committed offsets are the caller's to remove) and true is returned when it was known.
  Error remove_empty(const std::string& group_id, bool* existed);

  std::vector<GroupListing> list() const;
  std::optional<GroupDescription> describe(const std::string& group_id) const;
  // Shutdown: stops every timer; pending joins and syncs are dropped (their connections close).
  void close();

 private:
  struct Group;
  struct Member;
  Group& group(const std::string& id);
  Group* find(const std::string& id);
  std::string new_member_id(const std::string& client_id);
  void add_member(Group& g, const JoinRequest& request, const std::string& member_id, JoinDone done);
  // A known instance joined with no member id: it takes the old member's place under a new id.
  void replace_static_member(Group& g, const JoinRequest& request, const std::string& old_id, JoinDone done);
  // FENCED_INSTANCE_ID when `instance_id` belongs to the group under another member id.
  static Error fenced(const Group& g, const std::string& member_id, const std::string& instance_id);
  bool same_protocols(const Member& m, const JoinRequest& request) const;
  void prepare_rebalance(Group& g);
  void maybe_complete_join(Group& g);
  void complete_join(Group& g);
  void remove_member(Group& g, const std::string& member_id);
  void arm_session(Group& g, Member& m);
  void on_rebalance_timeout(const std::string& group_id);
  void on_session_expired(const std::string& group_id, const std::string& member_id);

  Scheduler& timers_;
  const GroupLimits limits_;
  std::map<std::string, std::unique_ptr<Group>> groups_;
  uint64_t next_member_ = 0;
  uint64_t member_salt_ = 0;
  std::shared_ptr<bool> alive_;  // timers hold it weakly: one firing after close() does nothing
};

}  // namespace streamd::kafka
