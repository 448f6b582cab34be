// DeleteGroups 0-2 and OffsetDelete 0 (docs/KAFKA.md §Groups): the admin side of consumer groups,
// over the coordinator's membership and the broker's group offsets (Broker::forget_offset). A group
// with members is not deleted (NON_EMPTY_GROUP), and an offset is not deleted on a topic a member is
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka refuses both. Deleting a group's offsets takes
// the read right on every topic they are on (GROUP_AUTHORIZATION_FAILED otherwise, and nothing of
// the group is deleted): the right that commits them.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/group_coordinator.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

// Collects the answers of many forget_offset calls and runs `finish` once on the loop after the
// last one.
struct Forgets {
  explicit Forgets(Services& s) : services(s) {}
  Services& services;
  size_t pending = 1;  // the caller's own hold, released by release()
  std::function<void()> finish;

  static void forget(const std::shared_ptr<Forgets>& self, const std::string& stream, const std::string& group,
                     int32_t partition, Error* out) {
    ++self->pending;
    self->services.broker.forget_offset(stream, group, PartitionId(partition), [self, out](Status status) {
      self->services.loop.post([self, out, status = std::move(status)] {
        *out = from_status(status);
        release(self);
      });
    });
  }
  static void release(const std::shared_ptr<Forgets>& self) {
    if (--self->pending == 0) self->finish();
  }
};

// The topics the members of a "consumer" group subscribe to (ConsumerProtocolSubscription: INT16
// version, then an array of topic names), as their JoinGroup metadata says.
std::set<std::string> subscribed_topics(const GroupDescription& d) {
  std::set<std::string> topics;
  for (const MemberDescription& m : d.members) {
    Reader r(m.metadata);
    r.i16();
    const int32_t n = r.count(2);
    for (int32_t i = 0; i < n && !r.failed(); ++i) {
      std::string_view t = r.string();
      if (!r.failed()) topics.emplace(t);
    }
  }
  return topics;
}

}  // namespace

bool handle_delete_groups(Request& request) {
  Reader& r = request.body;
  struct Result {
    std::string group;
    Error error = Error::kNone;
    std::vector<std::pair<std::string, int32_t>> offsets;  // stream, partition
    std::vector<Error> forgot;
  };
  auto results = std::make_shared<std::vector<Result>>(static_cast<size_t>(r.array(1)));
  for (Result& res : *results) {
    res.group = std::string(r.str());
    if (r.failed()) return false;
  }
  r.tags();
  if (r.failed()) return false;
  Broker& broker = request.services.broker;
  const auth::Principal& principal = request.principal;
  std::vector<StreamSummary> streams = broker.list_streams();
  for (Result& res : *results) {
    if (!principal.holds_anywhere(auth::Right::kRead)) {
      res.error = Error::kGroupAuthorizationFailed;
      continue;
    }
    bool denied = false;
    for (const StreamSummary& s : streams) {
      auto offsets = broker.list_groups(s.name);
      if (!offsets.ok()) continue;
      for (const GroupOffset& o : *offsets) {
        if (o.group != res.group) continue;
        denied |= !principal.allows(auth::Right::kRead, s.name);
        res.offsets.emplace_back(s.name, o.partition.value);
      }
    }
    if (denied) {
      res.error = Error::kGroupAuthorizationFailed;
      res.offsets.clear();
      continue;
    }
    bool existed = false;
    res.error = request.services.groups.remove_empty(res.group, &existed);
    if (res.error == Error::kNone && !existed && res.offsets.empty()) res.error = Error::kGroupIdNotFound;
    if (res.error != Error::kNone) res.offsets.clear();
  }
  auto forgets = std::make_shared<Forgets>(request.services);
  const bool flexible = request.flexible();
  forgets->finish = [results, responder = request.responder, flexible, &services = request.services] {
    std::string frame = responder.start();
    Writer w(frame, flexible);
    w.i32(0);  // throttle time
    w.array(static_cast<int32_t>(results->size()));
    for (Result& res : *results) {
      // The first offset that could not be deleted speaks for the group.
      for (Error e : res.forgot) {
        if (res.error == Error::kNone) res.error = e;
      }
      services.metrics.error(ApiKey::kDeleteGroups, res.error);
      w.str(res.group);
      w.i16(code(res.error));
      w.tags();
    }
    w.tags();
    responder.send(std::move(frame));
  };
  for (Result& res : *results) {
    res.forgot.assign(res.offsets.size(), Error::kNone);
    for (size_t i = 0; i < res.offsets.size(); ++i) {
      Forgets::forget(forgets, res.offsets[i].first, res.group, res.offsets[i].second, &res.forgot[i]);
    }
  }
  Forgets::release(forgets);
  return true;
}

bool handle_offset_delete(Request& request) {
  Reader& r = request.body;
  const std::string group(r.string());
  struct Topic {
    std::string name;
    std::vector<int32_t> partitions;
    std::vector<Error> errors;
  };
  auto topics = std::make_shared<std::vector<Topic>>(static_cast<size_t>(r.count(6)));
  for (Topic& t : *topics) {
    t.name = std::string(r.string());
    const int32_t n = r.count(4);
    for (int32_t i = 0; i < n && !r.failed(); ++i) t.partitions.push_back(r.i32());
    t.errors.assign(t.partitions.size(), Error::kNone);
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  Broker& broker = request.services.broker;
  const auth::Principal& principal = request.principal;
  Error top = principal.holds_anywhere(auth::Right::kRead) ? Error::kNone : Error::kGroupAuthorizationFailed;
  std::set<std::string> subscribed;
  if (top == Error::kNone) {
    auto d = request.services.groups.describe(group);
    bool known = d.has_value();
    for (const StreamSummary& s : broker.list_streams()) {
      if (known) break;
      auto offsets = broker.list_groups(s.name);
      if (!offsets.ok()) continue;
      for (const GroupOffset& o : *offsets) known |= o.group == group;
    }
    if (!known) {
      top = Error::kGroupIdNotFound;
    } else if (d && !d->members.empty()) {
      // A group that is not a consumer group cannot say what it reads: Kafka refuses it whole.
      if (d->protocol_type != "consumer") {
        top = Error::kNonEmptyGroup;
      } else {
        subscribed = subscribed_topics(*d);
      }
    }
  }
  auto forgets = std::make_shared<Forgets>(request.services);
  forgets->finish = [topics, top, responder = request.responder, &services = request.services] {
    std::string frame = responder.start();
    Writer w(frame);
    w.i16(code(top));
    w.i32(0);  // throttle time
    services.metrics.error(ApiKey::kOffsetDelete, top);
    w.array_count(top == Error::kNone ? static_cast<int32_t>(topics->size()) : 0);
    if (top == Error::kNone) {
      for (const Topic& t : *topics) {
        w.string(t.name);
        w.array_count(static_cast<int32_t>(t.partitions.size()));
        for (size_t i = 0; i < t.partitions.size(); ++i) {
          services.metrics.error(ApiKey::kOffsetDelete, t.errors[i]);
          w.i32(t.partitions[i]);
          w.i16(code(t.errors[i]));
        }
      }
    }
    responder.send(std::move(frame));
  };
  if (top == Error::kNone) {
    for (Topic& t : *topics) {
      Error e = Error::kNone;
      if (!principal.allows(auth::Right::kRead, t.name)) {
        e = Error::kTopicAuthorizationFailed;
      } else if (subscribed.count(t.name) != 0) {
        e = Error::kGroupSubscribedToTopic;
      }
      for (size_t i = 0; i < t.partitions.size(); ++i) {
        if (e != Error::kNone) {
          t.errors[i] = e;
        } else {
          Forgets::forget(forgets, t.name, group, t.partitions[i], &t.errors[i]);
        }
      }
    }
  }
  Forgets::release(forgets);
  return true;
}

}  // namespace streamd::kafka
