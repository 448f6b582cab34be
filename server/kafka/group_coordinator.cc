#include "server/kafka/group_coordinator.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "server/broker/broker.h"

namespace streamd::kafka {

enum class GroupState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable };

namespace {

std::string_view state_name(GroupState s) {
  switch (s) {
    case GroupState::kEmpty: return "Empty";
    case GroupState::kPreparingRebalance: return "PreparingRebalance";
    case GroupState::kCompletingRebalance: return "CompletingRebalance";
    case GroupState::kStable: return "Stable";
  }
  return "Dead";
}

}  // namespace

struct GroupCoordinator::Member {
  std::string id;
  std::string instance_id;  // empty: dynamic
  std::string client_id;
  std::string client_host;
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
  std::vector<Protocol> protocols;
  std::string assignment;
  uint64_t joined_order = 0;
  JoinDone join_done;  // set while its JoinGroup waits for the rebalance
  SyncDone sync_done;  // set while its SyncGroup waits for the leader's
  std::function<void()> cancel_session;

  const std::string* metadata_for(const std::string& protocol) const {
    for (const Protocol& p : protocols) {
      if (p.name == protocol) return &p.metadata;
    }
    return nullptr;
  }
};

struct GroupCoordinator::Group {
  std::string id;
  GroupState state = GroupState::kEmpty;
  int32_t generation = 0;
  std::string protocol_type;
  std::string protocol;
  std::string leader;
  std::map<std::string, Member> members;
  std::map<std::string, std::string> instances;  // static members: instance id → member id
  // Member ids handed out with MEMBER_ID_REQUIRED, not yet joined with; they expire like sessions.
  std::map<std::string, std::function<void()>> pending;
  std::function<void()> cancel_rebalance;
  uint64_t next_join_order = 0;
};

GroupCoordinator::GroupCoordinator(Scheduler& timers, GroupLimits limits)
    : timers_(timers), limits_(limits), alive_(std::make_shared<bool>(true)) {
  std::random_device rd;
  member_salt_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

GroupCoordinator::~GroupCoordinator() {
  close();
}

void GroupCoordinator::close() {
  alive_.reset();  // timers still queued find it expired
  for (auto& [id, g] : groups_) {
    if (g->cancel_rebalance) g->cancel_rebalance();
    for (auto& [mid, m] : g->members) {
      if (m.cancel_session) m.cancel_session();
    }
    for (auto& [mid, cancel] : g->pending) cancel();
  }
  groups_.clear();
}

GroupCoordinator::Group& GroupCoordinator::group(const std::string& id) {
  auto& slot = groups_[id];
  if (!slot) {
    slot = std::make_unique<Group>();
    slot->id = id;
  }
  return *slot;
}

GroupCoordinator::Group* GroupCoordinator::find(const std::string& id) {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : it->second.get();
}

std::string GroupCoordinator::new_member_id(const std::string& client_id) {
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "-%016llx-%llu", static_cast<unsigned long long>(member_salt_),
                static_cast<unsigned long long>(++next_member_));
  return (client_id.empty() ? std::string("member") : client_id) + suffix;
}

void GroupCoordinator::join(const JoinRequest& request, JoinDone done) {
  JoinResult refused;
  refused.member_id = request.member_id;
  if (request.group_id.empty()) {
    refused.error = Error::kInvalidGroupId;
    return done(refused);
  }
  if (request.session_timeout < limits_.min_session_timeout ||
      request.session_timeout > limits_.max_session_timeout) {
    refused.error = Error::kInvalidSessionTimeout;
    return done(refused);
  }
  if (request.protocol_type.empty() || request.protocols.empty()) {
    refused.error = Error::kInconsistentGroupProtocol;
    return done(refused);
  }
  Group& g = group(request.group_id);
  if (!g.members.empty()) {
    // Every member must share the type and at least one protocol with those already in.
    bool common = false;
    for (const Protocol& p : request.protocols) {
      bool all = true;
      for (const auto& [id, m] : g.members) {
        if (id != request.member_id && m.metadata_for(p.name) == nullptr) all = false;
      }
      common = common || all;
    }
    if (request.protocol_type != g.protocol_type || !common) {
      refused.error = Error::kInconsistentGroupProtocol;
      return done(refused);
    }
  }
  if (!request.instance_id.empty()) {
    auto known = g.instances.find(request.instance_id);
    if (known != g.instances.end() && request.member_id.empty()) {
      replace_static_member(g, request, known->second, std::move(done));
      return;
    }
    if (Error e = fenced(g, request.member_id, request.instance_id); e != Error::kNone) {
      refused.error = e;
      return done(refused);
    }
    if (known == g.instances.end() && request.member_id.empty()) {
      // A new static member joins at once: its instance id already names it (KIP-345).
      const std::string id = new_member_id(request.client_id);
      g.instances[request.instance_id] = id;
      add_member(g, request, id, std::move(done));
      return;
    }
  }
  if (request.member_id.empty()) {
    const std::string id = new_member_id(request.client_id);
    if (request.require_known_member_id) {
      // Kafka 2.2+ (KIP-394): the member learns its id first and joins with it.
      std::weak_ptr<bool> alive = alive_;
      g.pending[id] = timers_.schedule_after(request.session_timeout, [this, alive, gid = g.id, id] {
        if (alive.expired()) return;
        if (Group* pg = find(gid)) pg->pending.erase(id);
      });
      refused.error = Error::kMemberIdRequired;
      refused.member_id = id;
      return done(refused);
    }
    add_member(g, request, id, std::move(done));
    return;
  }
  if (auto p = g.pending.find(request.member_id); p != g.pending.end()) {
    p->second();
    g.pending.erase(p);
    add_member(g, request, request.member_id, std::move(done));
    return;
  }
  auto it = g.members.find(request.member_id);
  if (it == g.members.end()) {
    refused.error = Error::kUnknownMemberId;
    return done(refused);
  }
  Member& m = it->second;
  const bool same = same_protocols(m, request);
  if (same && m.id != g.leader &&
      (g.state == GroupState::kStable || g.state == GroupState::kCompletingRebalance)) {
    // A follower's rejoin that changes nothing: the current generation stands.
    JoinResult result;
    result.generation = g.generation;
    result.protocol = g.protocol;
    result.leader = g.leader;
    result.member_id = m.id;
    arm_session(g, m);
    return done(result);
  }
  m.protocols = request.protocols;
  m.session_timeout = request.session_timeout;
  m.rebalance_timeout = request.rebalance_timeout;
  if (m.join_done) {
    JoinResult superseded;
    superseded.error = Error::kUnknownMemberId;
    m.join_done(superseded);
  }
  m.join_done = std::move(done);
  if (m.cancel_session) {
    m.cancel_session();
    m.cancel_session = nullptr;
  }
  if (g.state != GroupState::kPreparingRebalance) prepare_rebalance(g);
  maybe_complete_join(g);
}

bool GroupCoordinator::same_protocols(const Member& m, const JoinRequest& request) const {
  bool same = m.protocols.size() == request.protocols.size();
  for (size_t i = 0; same && i < m.protocols.size(); ++i) {
    same = m.protocols[i].name == request.protocols[i].name && m.protocols[i].metadata == request.protocols[i].metadata;
  }
  return same;
}

Error GroupCoordinator::fenced(const Group& g, const std::string& member_id, const std::string& instance_id) {
  if (instance_id.empty()) return Error::kNone;
  auto it = g.instances.find(instance_id);
  if (it == g.instances.end()) return member_id.empty() ? Error::kNone : Error::kUnknownMemberId;
  return it->second == member_id ? Error::kNone : Error::kFencedInstanceId;
}

void GroupCoordinator::replace_static_member(Group& g, const JoinRequest& request, const std::string& old_id,
                                             JoinDone done) {
  auto it = g.members.find(old_id);
  if (it == g.members.end()) {  // cannot happen: instances and members change together
    g.instances.erase(request.instance_id);
    return add_member(g, request, new_member_id(request.client_id), std::move(done));
  }
  Member old = std::move(it->second);
  g.members.erase(it);
  if (old.cancel_session) old.cancel_session();
  // The old incarnation's waiting calls are answered: it is fenced.
  if (old.join_done) old.join_done(JoinResult{Error::kFencedInstanceId, -1, {}, {}, old.id, {}});
  if (old.sync_done) old.sync_done(SyncResult{Error::kFencedInstanceId, {}});
  const std::string id = new_member_id(request.client_id);
  Member& m = g.members[id];
  m = std::move(old);
  m.id = id;
  m.join_done = nullptr;
  m.sync_done = nullptr;
  m.cancel_session = nullptr;
  m.client_id = request.client_id;
  m.client_host = request.client_host;
  m.session_timeout = request.session_timeout;
  m.rebalance_timeout = request.rebalance_timeout;
  g.instances[request.instance_id] = id;
  if (g.leader == old_id) g.leader = id;
  if (g.state == GroupState::kStable && same_protocols(m, request)) {
    // Nothing the group agreed on changed: the member gets its place back, the others carry on.
    JoinResult result;
    result.generation = g.generation;
    result.protocol = g.protocol;
    result.leader = g.leader;
    result.member_id = id;
    if (id == g.leader) {
      for (const auto& [mid, other] : g.members) {
        const std::string* meta = other.metadata_for(g.protocol);
        result.members.push_back({mid, meta != nullptr ? *meta : std::string(), other.instance_id});
      }
    }
    arm_session(g, m);
    return done(result);
  }
  m.protocols = request.protocols;
  m.join_done = std::move(done);
  if (g.state != GroupState::kPreparingRebalance) prepare_rebalance(g);
  maybe_complete_join(g);
}

void GroupCoordinator::add_member(Group& g, const JoinRequest& request, const std::string& member_id,
                                  JoinDone done) {
  if (g.members.empty()) g.protocol_type = request.protocol_type;
  Member& m = g.members[member_id];
  m.id = member_id;
  m.instance_id = request.instance_id;
  m.client_id = request.client_id;
  m.client_host = request.client_host;
  m.session_timeout = request.session_timeout;
  m.rebalance_timeout = request.rebalance_timeout;
  m.protocols = request.protocols;
  m.joined_order = g.next_join_order++;
  m.join_done = std::move(done);
  if (g.state != GroupState::kPreparingRebalance) prepare_rebalance(g);
  maybe_complete_join(g);
}

void GroupCoordinator::prepare_rebalance(Group& g) {
  if (g.state == GroupState::kCompletingRebalance) {
    // The assignments being synced belong to a generation that is already over.
    for (auto& [id, m] : g.members) {
      if (m.sync_done) {
        auto done = std::move(m.sync_done);
        m.sync_done = nullptr;
        done(SyncResult{Error::kRebalanceInProgress, {}});
      }
    }
  }
  g.state = GroupState::kPreparingRebalance;
  std::chrono::milliseconds timeout{0};
  for (const auto& [id, m] : g.members) timeout = std::max(timeout, m.rebalance_timeout);
  if (g.cancel_rebalance) g.cancel_rebalance();
  std::weak_ptr<bool> alive = alive_;
  g.cancel_rebalance = timers_.schedule_after(timeout, [this, alive, gid = g.id] {
    if (alive.expired()) return;
    on_rebalance_timeout(gid);
  });
}

void GroupCoordinator::maybe_complete_join(Group& g) {
  if (g.state != GroupState::kPreparingRebalance) return;
  for (const auto& [id, m] : g.members) {
    if (!m.join_done) return;
  }
  complete_join(g);
}

void GroupCoordinator::on_rebalance_timeout(const std::string& group_id) {
  Group* g = find(group_id);
  if (g == nullptr || g->state != GroupState::kPreparingRebalance) return;
  g->cancel_rebalance = nullptr;
  // Members that did not rejoin in time are out of the group.
  std::vector<std::string> gone;
  for (const auto& [id, m] : g->members) {
    if (!m.join_done) gone.push_back(id);
  }
  for (const std::string& id : gone) {
    if (g->members[id].cancel_session) g->members[id].cancel_session();
    if (!g->members[id].instance_id.empty()) g->instances.erase(g->members[id].instance_id);
    g->members.erase(id);
  }
  complete_join(*g);
}

void GroupCoordinator::complete_join(Group& g) {
  if (g.cancel_rebalance) {
    g.cancel_rebalance();
    g.cancel_rebalance = nullptr;
  }
  ++g.generation;
  if (g.members.empty()) {
    g.state = GroupState::kEmpty;
    g.protocol.clear();
    g.leader.clear();
    return;
  }
  // The protocol every member supports that most members prefer (each votes for its first such).
  std::vector<const Member*> order;
  for (const auto& [id, m] : g.members) order.push_back(&m);
  std::sort(order.begin(), order.end(), [](const Member* a, const Member* b) { return a->joined_order < b->joined_order; });
  std::map<std::string, int> votes;
  for (const Member* m : order) {
    for (const Protocol& p : m->protocols) {
      bool all = std::all_of(order.begin(), order.end(), [&](const Member* o) { return o->metadata_for(p.name) != nullptr; });
      if (all) {
        ++votes[p.name];
        break;
      }
    }
  }
  g.protocol.clear();
  int best = 0;
  for (const Protocol& p : order.front()->protocols) {
    auto v = votes.find(p.name);
    if (v != votes.end() && v->second > best) {
      best = v->second;
      g.protocol = p.name;
    }
  }
  if (g.members.find(g.leader) == g.members.end()) g.leader = order.front()->id;
  g.state = GroupState::kCompletingRebalance;
  std::vector<JoinedMember> all;
  for (const Member* m : order) {
    const std::string* meta = m->metadata_for(g.protocol);
    all.push_back({m->id, meta != nullptr ? *meta : std::string(), m->instance_id});
  }
  for (const Member* cm : order) {
    Member& m = g.members[cm->id];
    m.assignment.clear();
    JoinResult result;
    result.generation = g.generation;
    result.protocol = g.protocol;
    result.leader = g.leader;
    result.member_id = m.id;
    if (m.id == g.leader) result.members = all;
    auto done = std::move(m.join_done);
    m.join_done = nullptr;
    arm_session(g, m);
    if (done) done(result);
  }
}

void GroupCoordinator::sync(const std::string& group_id, int32_t generation, const std::string& member_id,
                            std::vector<Assignment> assignments, SyncDone done, const std::string& instance_id) {
  Group* g = find(group_id);
  if (g != nullptr) {
    if (Error e = fenced(*g, member_id, instance_id); e != Error::kNone) return done(SyncResult{e, {}});
  }
  if (g == nullptr || g->members.find(member_id) == g->members.end()) {
    return done(SyncResult{Error::kUnknownMemberId, {}});
  }
  Member& m = g->members[member_id];
  if (generation != g->generation) return done(SyncResult{Error::kIllegalGeneration, {}});
  arm_session(*g, m);
  switch (g->state) {
    case GroupState::kEmpty:
      return done(SyncResult{Error::kUnknownMemberId, {}});
    case GroupState::kPreparingRebalance:
      return done(SyncResult{Error::kRebalanceInProgress, {}});
    case GroupState::kStable:
      return done(SyncResult{Error::kNone, m.assignment});
    case GroupState::kCompletingRebalance:
      break;
  }
  m.sync_done = std::move(done);
  if (member_id != g->leader) return;
  for (Assignment& a : assignments) {
    if (auto it = g->members.find(a.member_id); it != g->members.end()) it->second.assignment = std::move(a.assignment);
  }
  g->state = GroupState::kStable;
  for (auto& [id, member] : g->members) {
    if (!member.sync_done) continue;
    auto waiting = std::move(member.sync_done);
    member.sync_done = nullptr;
    waiting(SyncResult{Error::kNone, member.assignment});
  }
}

Error GroupCoordinator::heartbeat(const std::string& group_id, int32_t generation, const std::string& member_id,
                                  const std::string& instance_id) {
  Group* g = find(group_id);
  if (g == nullptr) return Error::kUnknownMemberId;
  if (Error e = fenced(*g, member_id, instance_id); e != Error::kNone) return e;
  auto it = g->members.find(member_id);
  if (it == g->members.end()) return Error::kUnknownMemberId;
  if (generation != g->generation) return Error::kIllegalGeneration;
  arm_session(*g, it->second);
  if (g->state == GroupState::kPreparingRebalance) return Error::kRebalanceInProgress;
  return Error::kNone;
}

Error GroupCoordinator::leave(const std::string& group_id, const std::string& member_id,
                              const std::string& instance_id) {
  Group* g = find(group_id);
  if (g == nullptr) return Error::kUnknownMemberId;
  std::string id = member_id;
  if (!instance_id.empty()) {
    auto it = g->instances.find(instance_id);
    if (it == g->instances.end()) return Error::kUnknownMemberId;
    if (!member_id.empty() && it->second != member_id) return Error::kFencedInstanceId;
    id = it->second;
  }
  if (g->members.find(id) == g->members.end()) return Error::kUnknownMemberId;
  remove_member(*g, id);
  return Error::kNone;
}

Error GroupCoordinator::check_commit(const std::string& group_id, int32_t generation, const std::string& member_id,
                                     const std::string& instance_id) {
  Group* g = find(group_id);
  if (g != nullptr) {
    if (Error e = fenced(*g, member_id, instance_id); e != Error::kNone) return e;
  }
  if (generation < 0 && member_id.empty()) {
    return g == nullptr || g->members.empty() ? Error::kNone : Error::kUnknownMemberId;
  }
  if (g == nullptr) return Error::kUnknownMemberId;
  auto it = g->members.find(member_id);
  if (it == g->members.end()) return Error::kUnknownMemberId;
  if (generation != g->generation) return Error::kIllegalGeneration;
  if (g->state == GroupState::kPreparingRebalance) return Error::kRebalanceInProgress;
  arm_session(*g, it->second);
  return Error::kNone;
}

void GroupCoordinator::remove_member(Group& g, const std::string& member_id) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return;
  Member& m = it->second;
  if (m.cancel_session) m.cancel_session();
  if (!m.instance_id.empty()) g.instances.erase(m.instance_id);
  if (m.join_done) m.join_done(JoinResult{Error::kUnknownMemberId, -1, {}, {}, member_id, {}});
  if (m.sync_done) m.sync_done(SyncResult{Error::kUnknownMemberId, {}});
  g.members.erase(it);
  if (g.leader == member_id) g.leader.clear();
  if (g.members.empty() && g.state != GroupState::kPreparingRebalance) {
    if (g.cancel_rebalance) g.cancel_rebalance();
    g.cancel_rebalance = nullptr;
    ++g.generation;
    g.state = GroupState::kEmpty;
    g.protocol.clear();
    return;
  }
  if (g.state != GroupState::kPreparingRebalance) prepare_rebalance(g);
  maybe_complete_join(g);
}

void GroupCoordinator::arm_session(Group& g, Member& m) {
  if (m.cancel_session) m.cancel_session();
  std::weak_ptr<bool> alive = alive_;
  m.cancel_session = timers_.schedule_after(m.session_timeout, [this, alive, gid = g.id, mid = m.id] {
    if (alive.expired()) return;
    on_session_expired(gid, mid);
  });
}

void GroupCoordinator::on_session_expired(const std::string& group_id, const std::string& member_id) {
  Group* g = find(group_id);
  if (g == nullptr) return;
  auto it = g->members.find(member_id);
  if (it == g->members.end() || it->second.join_done) return;  // a waiting join is timed by the rebalance
  it->second.cancel_session = nullptr;
  remove_member(*g, member_id);
}

Error GroupCoordinator::remove_empty(const std::string& group_id, bool* existed) {
  auto it = groups_.find(group_id);
  *existed = it != groups_.end();
  if (it == groups_.end()) return Error::kNone;
  Group& g = *it->second;
  if (!g.members.empty()) return Error::kNonEmptyGroup;
  if (g.cancel_rebalance) g.cancel_rebalance();
  for (auto& [mid, cancel] : g.pending) cancel();
  groups_.erase(it);
  return Error::kNone;
}

std::vector<GroupListing> GroupCoordinator::list() const {
  std::vector<GroupListing> out;
  for (const auto& [id, g] : groups_) out.push_back({id, g->protocol_type, std::string(state_name(g->state))});
  return out;
}

std::optional<GroupDescription> GroupCoordinator::describe(const std::string& group_id) const {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return std::nullopt;
  const Group& g = *it->second;
  GroupDescription d;
  d.state = std::string(state_name(g.state));
  d.protocol_type = g.protocol_type;
  d.protocol = g.protocol;
  for (const auto& [id, m] : g.members) {
    const std::string* meta = m.metadata_for(g.protocol);
    d.members.push_back(
        {id, m.instance_id, m.client_id, m.client_host, meta != nullptr ? *meta : std::string(), m.assignment});
  }
  return d;
}

}  // namespace streamd::kafka
