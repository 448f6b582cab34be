// FindCoordinator 0-2, JoinGroup 0-5, SyncGroup 0-3, Heartbeat 0-3, LeaveGroup 0-3, ListGroups 0-4
// (v3+ flexible, v4 with states) and DescribeGroups 0-5 (v5 flexible): wire codecs over the
// GroupCoordinator (group_coordinator.h). This broker coordinates every group. Static membership
// (group.instance.id: JoinGroup v5, SyncGroup, Heartbeat and LeaveGroup v3) is the coordinator's
// (docs/KAFKA.md §Groups). A principal that may read no stream
// at all cannot consume, and is refused every group API with GROUP_AUTHORIZATION_FAILED; ListGroups
// shows it the groups of the streams it may read.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/group_coordinator.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

void count(Request& request, Error e) {
  request.services.metrics.error(request.responder.api(), e);
}

// Group membership is for consumers: principals holding read on some stream.
bool may_join_groups(const Request& request) { return request.principal.holds_anywhere(auth::Right::kRead); }

}  // namespace

bool handle_find_coordinator(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  r.string();  // key: every group is coordinated here
  int8_t key_type = 0;
  if (version >= 1) key_type = r.i8();
  if (r.failed()) return false;
  // This broker coordinates every group, and every transactional id when its engine takes transactions.
  Error error = Error::kNone;
  if (key_type == 0) {
    if (!may_join_groups(request)) error = Error::kGroupAuthorizationFailed;
  } else if (key_type != 1 || request.services.broker.transactions() == nullptr) {
    error = Error::kCoordinatorNotAvailable;
  } else if (!request.principal.holds_anywhere(auth::Right::kWrite)) {
    error = Error::kTransactionalIdAuthorizationFailed;
  }
  count(request, error);
  const KafkaOptions& o = request.services.options;
  std::string frame = request.responder.start();
  Writer w(frame);
  if (version >= 1) w.i32(0);  // throttle time
  w.i16(code(error));
  if (version >= 1) w.nullable_string(std::nullopt);  // error message
  w.i32(error == Error::kNone ? o.node_id : -1);
  w.string(error == Error::kNone ? std::string_view(request.advertised.host) : std::string_view());
  w.i32(error == Error::kNone ? request.advertised.port : -1);
  request.responder.send(std::move(frame));
  return true;
}

bool handle_join_group(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  JoinRequest join;
  join.group_id = std::string(r.string());
  join.session_timeout = std::chrono::milliseconds(r.i32());
  join.rebalance_timeout = version >= 1 ? std::chrono::milliseconds(r.i32()) : join.session_timeout;
  join.member_id = std::string(r.string());
  if (version >= 5) join.instance_id = std::string(r.nullable_string().value_or(std::string_view()));
  join.protocol_type = std::string(r.string());
  const int32_t protocols = r.count(6);
  for (int32_t i = 0; i < protocols && !r.failed(); ++i) {
    Protocol p;
    p.name = std::string(r.string());
    p.metadata = std::string(r.nullable_bytes().value_or(std::string_view()));
    join.protocols.push_back(std::move(p));
  }
  if (r.failed()) return false;
  join.client_id = request.header.client_id;
  join.client_host = request.responder.connection()->peer();
  join.require_known_member_id = version >= 4;
  auto reply = [responder = request.responder, version, &services = request.services](const JoinResult& result) {
    services.metrics.error(ApiKey::kJoinGroup, result.error);
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 2) w.i32(0);  // throttle time
    w.i16(code(result.error));
    w.i32(result.generation);
    w.string(result.protocol);
    w.string(result.leader);
    w.string(result.member_id);
    w.array_count(static_cast<int32_t>(result.members.size()));
    for (const JoinedMember& m : result.members) {
      w.string(m.member_id);
      if (version >= 5) {
        w.nullable_string(m.instance_id.empty() ? std::nullopt : std::optional<std::string_view>(m.instance_id));
      }
      w.bytes(m.metadata);
    }
    responder.send(std::move(frame));
  };
  if (!may_join_groups(request)) {
    JoinResult refused;
    refused.error = Error::kGroupAuthorizationFailed;
    refused.member_id = join.member_id;
    reply(refused);
    return true;
  }
  request.services.groups.join(join, std::move(reply));
  return true;
}

bool handle_sync_group(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.string());
  const int32_t generation = r.i32();
  const std::string member(r.string());
  std::string instance;
  if (version >= 3) instance = std::string(r.nullable_string().value_or(std::string_view()));
  std::vector<Assignment> assignments;
  const int32_t n = r.count(6);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    Assignment a;
    a.member_id = std::string(r.string());
    a.assignment = std::string(r.nullable_bytes().value_or(std::string_view()));
    assignments.push_back(std::move(a));
  }
  if (r.failed()) return false;
  auto reply = [responder = request.responder, version, &services = request.services](const SyncResult& result) {
    services.metrics.error(ApiKey::kSyncGroup, result.error);
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 1) w.i32(0);
    w.i16(code(result.error));
    w.bytes(result.assignment);
    responder.send(std::move(frame));
  };
  if (!may_join_groups(request)) {
    SyncResult refused;
    refused.error = Error::kGroupAuthorizationFailed;
    reply(refused);
    return true;
  }
  request.services.groups.sync(group, generation, member, std::move(assignments), std::move(reply), instance);
  return true;
}

bool handle_heartbeat(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.string());
  const int32_t generation = r.i32();
  const std::string member(r.string());
  std::string instance;
  if (version >= 3) instance = std::string(r.nullable_string().value_or(std::string_view()));
  if (r.failed()) return false;
  const Error error = may_join_groups(request) ? request.services.groups.heartbeat(group, generation, member, instance)
                                               : Error::kGroupAuthorizationFailed;
  count(request, error);
  std::string frame = request.responder.start();
  Writer w(frame);
  if (version >= 1) w.i32(0);
  w.i16(code(error));
  request.responder.send(std::move(frame));
  return true;
}

bool handle_leave_group(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.string());
  std::vector<std::pair<std::string, std::string>> members;  // member id, instance id
  if (version <= 2) {
    members.emplace_back(r.string(), std::string());
  } else {
    const int32_t n = r.count(4);
    for (int32_t i = 0; i < n && !r.failed(); ++i) {
      std::string id(r.string());
      members.emplace_back(std::move(id), std::string(r.nullable_string().value_or(std::string_view())));
    }
  }
  if (r.failed()) return false;
  std::vector<Error> errors;
  for (const auto& [m, instance] : members) {
    errors.push_back(may_join_groups(request) ? request.services.groups.leave(group, m, instance)
                                              : Error::kGroupAuthorizationFailed);
  }
  std::string frame = request.responder.start();
  Writer w(frame);
  if (version >= 1) w.i32(0);
  if (version <= 2) {
    w.i16(code(errors.front()));
    count(request, errors.front());
  } else {
    w.i16(0);
    w.array_count(static_cast<int32_t>(members.size()));
    for (size_t i = 0; i < members.size(); ++i) {
      w.string(members[i].first);
      const std::string& instance = members[i].second;
      w.nullable_string(instance.empty() ? std::nullopt : std::optional<std::string_view>(instance));
      w.i16(code(errors[i]));
      count(request, errors[i]);
    }
  }
  request.responder.send(std::move(frame));
  return true;
}

bool handle_list_groups(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  // v4: only the groups in these states (none: every state).
  std::vector<std::string> states;
  if (version >= 4) {
    const int32_t n = r.array(1);
    for (int32_t i = 0; i < n && !r.failed(); ++i) states.emplace_back(r.str());
  }
  r.tags();
  if (r.failed()) return false;
  // Groups with members, and groups known only by their committed offsets (streamctl's, or a Kafka
  // group whose members have all gone, which are Empty): one namespace.
  std::map<std::string, std::pair<std::string, std::string>> groups;  // id → protocol type, state
  if (may_join_groups(request)) {
    for (const GroupListing& g : request.services.groups.list()) groups[g.group_id] = {g.protocol_type, g.state};
  }
  Broker& broker = request.services.broker;
  for (const StreamSummary& s : broker.list_streams()) {
    if (!request.principal.allows(auth::Right::kRead, s.name)) continue;
    auto offsets = broker.list_groups(s.name);
    if (!offsets.ok()) continue;
    for (const GroupOffset& o : *offsets) groups.try_emplace(o.group, "consumer", "Empty");
  }
  if (!states.empty()) {
    std::erase_if(groups, [&](const auto& g) {
      // Kafka matches state names without regard to case.
      return std::none_of(states.begin(), states.end(), [&](const std::string& want) {
        return std::equal(want.begin(), want.end(), g.second.second.begin(), g.second.second.end(),
                          [](char a, char b) { return std::tolower(a) == std::tolower(b); });
      });
    });
  }
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  if (version >= 1) w.i32(0);
  w.i16(0);
  w.array(static_cast<int32_t>(groups.size()));
  for (const auto& [id, listing] : groups) {
    w.str(id);
    w.str(listing.first);
    if (version >= 4) w.str(listing.second);
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_describe_groups(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  std::vector<std::string> ids;
  const int32_t n = r.array(1);
  for (int32_t i = 0; i < n && !r.failed(); ++i) ids.emplace_back(r.str());
  if (version >= 3) r.boolean();  // include authorized operations
  r.tags();
  if (r.failed()) return false;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  if (version >= 1) w.i32(0);
  w.array(static_cast<int32_t>(ids.size()));
  const bool allowed = may_join_groups(request);
  for (const std::string& id : ids) {
    if (!allowed) {
      count(request, Error::kGroupAuthorizationFailed);
      w.i16(code(Error::kGroupAuthorizationFailed));
      w.str(id);
      w.str("");
      w.str("");
      w.str("");
      w.array(0);
      if (version >= 3) w.i32(-2147483648);
      w.tags();
      continue;
    }
    auto d = request.services.groups.describe(id);
    w.i16(0);
    w.str(id);
    // A group known only by offsets, or not at all, is Empty (Kafka says Dead for the unknown).
    w.str(d ? std::string_view(d->state) : std::string_view(id.empty() ? "Dead" : "Empty"));
    w.str(d ? std::string_view(d->protocol_type) : std::string_view());
    w.str(d ? std::string_view(d->protocol) : std::string_view());
    w.array(d ? static_cast<int32_t>(d->members.size()) : 0);
    if (d) {
      for (const MemberDescription& m : d->members) {
        w.str(m.member_id);
        if (version >= 4) {
          w.nullable_str(m.instance_id.empty() ? std::nullopt : std::optional<std::string_view>(m.instance_id));
        }
        w.str(m.client_id);
        w.str(m.client_host);
        w.byte_string(m.metadata);
        w.byte_string(m.assignment);
        w.tags();
      }
    }
    if (version >= 3) w.i32(-2147483648);  // authorized operations: not computed
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
