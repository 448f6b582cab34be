// OffsetCommit 0-7 and OffsetFetch 0-5 over the broker's group offsets (Broker::commit and
// committed): a Kafka group's committed offsets are streamd's, so streamctl shows and resumes them
// (docs/KAFKA.md §Offsets). Commit metadata strings are not kept; OffsetFetch answers them empty.
// OffsetFetch stops at v5: v6 is flexible, and librdkafka would switch to it. A group's offsets on a
// topic take the read right on it (TOPIC_AUTHORIZATION_FAILED otherwise); a principal that may read
// nothing at all is GROUP_AUTHORIZATION_FAILED.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/group_coordinator.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

struct CommitPartition {
  int32_t index = 0;
  int64_t offset = 0;
  Error error = Error::kNone;
};

struct CommitTopic {
  std::string name;
  std::vector<CommitPartition> partitions;
};

struct CommitState {
  CommitState(Responder r, Services& s, int16_t v) : responder(std::move(r)), services(s), version(v) {}
  Responder responder;
  Services& services;
  int16_t version;
  std::vector<CommitTopic> topics;
  size_t pending = 0;

  void finish() {
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 3) w.i32(0);
    w.array_count(static_cast<int32_t>(topics.size()));
    for (const CommitTopic& t : topics) {
      w.string(t.name);
      w.array_count(static_cast<int32_t>(t.partitions.size()));
      for (const CommitPartition& p : t.partitions) {
        w.i32(p.index);
        w.i16(code(p.error));
        services.metrics.error(ApiKey::kOffsetCommit, p.error);
      }
    }
    responder.send(std::move(frame));
  }
};

}  // namespace

bool handle_offset_commit(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.string());
  int32_t generation = -1;
  std::string member;
  if (version >= 1) {
    generation = r.i32();
    member = std::string(r.string());
  }
  if (version >= 7) r.nullable_string();            // group instance id
  if (version >= 2 && version <= 4) r.i64();        // retention time: offsets are kept with the stream
  auto state = std::make_shared<CommitState>(request.responder, request.services, version);
  state->topics.resize(static_cast<size_t>(r.count(6)));
  for (CommitTopic& t : state->topics) {
    t.name = std::string(r.string());
    t.partitions.resize(static_cast<size_t>(r.count(14)));
    for (CommitPartition& p : t.partitions) {
      p.index = r.i32();
      p.offset = r.i64();
      if (version >= 6) r.i32();  // leader epoch
      if (version == 1) r.i64();  // commit timestamp
      r.nullable_string();        // metadata: not kept
    }
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  const auth::Principal& principal = request.principal;
  const Error allowed = principal.holds_anywhere(auth::Right::kRead)
                            ? request.services.groups.check_commit(group, generation, member)
                            : Error::kGroupAuthorizationFailed;
  state->pending = 1;
  for (size_t t = 0; t < state->topics.size(); ++t) {
    const bool readable = principal.allows(auth::Right::kRead, state->topics[t].name);
    for (size_t i = 0; i < state->topics[t].partitions.size(); ++i) {
      CommitPartition& p = state->topics[t].partitions[i];
      if (allowed != Error::kNone) {
        p.error = allowed;
        continue;
      }
      if (!readable) {
        p.error = Error::kTopicAuthorizationFailed;
        continue;
      }
      if (p.offset < 0) {
        p.error = Error::kOffsetOutOfRange;
        continue;
      }
      ++state->pending;
      request.services.broker.commit(
          state->topics[t].name, group, PartitionId(p.index), Offset(static_cast<uint64_t>(p.offset)),
          [state, t, i](Status status) {
            state->services.loop.post([state, t, i, status = std::move(status)] {
              state->topics[t].partitions[i].error = from_status(status);
              if (--state->pending == 0) state->finish();
            });
          });
    }
  }
  if (--state->pending == 0) state->finish();
  return true;
}

bool handle_offset_fetch(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.string());
  Broker& broker = request.services.broker;
  // topic → partitions asked for, in request order.
  std::vector<std::pair<std::string, std::vector<int32_t>>> topics;
  auto n = r.array_count(6);
  if (n) {
    for (int32_t i = 0; i < *n && !r.failed(); ++i) {
      auto& [name, partitions] = topics.emplace_back(std::string(r.string()), std::vector<int32_t>());
      const int32_t m = r.count(4);
      for (int32_t j = 0; j < m && !r.failed(); ++j) partitions.push_back(r.i32());
    }
  } else if (version < 2) {
    return false;
  }
  if (r.failed()) return false;
  const auth::Principal& principal = request.principal;
  const bool member = principal.holds_anywhere(auth::Right::kRead);
  if (!n && member) {
    // Null (v2+): every partition the group has committed, on the topics the principal may read.
    for (const StreamSummary& s : broker.list_streams()) {
      if (!principal.allows(auth::Right::kRead, s.name)) continue;
      auto offsets = broker.list_groups(s.name);
      if (!offsets.ok()) continue;
      std::vector<int32_t> partitions;
      for (const GroupOffset& o : *offsets) {
        if (o.group == group) partitions.push_back(o.partition.value);
      }
      if (!partitions.empty()) topics.emplace_back(s.name, std::move(partitions));
    }
  }
  std::string frame = request.responder.start();
  Writer w(frame);
  if (version >= 3) w.i32(0);
  w.array_count(static_cast<int32_t>(topics.size()));
  const Error group_error = member ? Error::kNone : Error::kGroupAuthorizationFailed;
  for (const auto& [name, partitions] : topics) {
    const Error topic_error = group_error != Error::kNone                    ? group_error
                              : principal.allows(auth::Right::kRead, name) ? Error::kNone
                                                                           : Error::kTopicAuthorizationFailed;
    if (topic_error != Error::kNone) request.services.metrics.error(ApiKey::kOffsetFetch, topic_error);
    w.string(name);
    w.array_count(static_cast<int32_t>(partitions.size()));
    for (int32_t p : partitions) {
      auto committed = topic_error == Error::kNone ? broker.committed(name, group, PartitionId(p))
                                                   : Result<Offset>(Status::of(Code::kPermissionDenied));
      // Never committed, or an unknown topic: -1 and no error, as Kafka answers.
      w.i32(p);
      w.i64(committed.ok() ? static_cast<int64_t>(committed->value) : -1);
      if (version >= 5) w.i32(-1);  // leader epoch
      w.nullable_string(std::string_view());
      w.i16(code(topic_error));
    }
  }
  if (version >= 2) w.i16(code(group_error));
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
