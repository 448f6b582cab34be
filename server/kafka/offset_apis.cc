// OffsetCommit 0-7 and OffsetFetch 0-7 (v6+ flexible) over the broker's group offsets
// (Broker::store_offset and commit_of): a Kafka group's committed offsets are streamd's, so streamctl
// shows and resumes them (docs/KAFKA.md §Groups). As Kafka does, a commit is never checked against
// the log — an offset past the end, or on an empty topic, is kept — and keeps its metadata string
// (at most 4096 bytes: OFFSET_METADATA_TOO_LARGE); offset -1, Kafka's "no offset", removes the
// group's commit on the partition, which OffsetFetch then answers as -1. A group's offsets on a
// topic take the read right on it (TOPIC_AUTHORIZATION_FAILED otherwise); a principal that may read
// nothing at all is GROUP_AUTHORIZATION_FAILED.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/storage/group_offsets.h"
#include "server/kafka/group_coordinator.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

struct CommitPartition {
  int32_t index = 0;
  int64_t offset = 0;
  std::string metadata;
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
  std::string instance;
  if (version >= 7) instance = std::string(r.nullable_string().value_or(std::string_view()));
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
      p.metadata = std::string(r.nullable_string().value_or(std::string_view()));  // null keeps none
    }
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  const auth::Principal& principal = request.principal;
  const Error allowed = principal.holds_anywhere(auth::Right::kRead)
                            ? request.services.groups.check_commit(group, generation, member, instance)
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
      if (p.offset < -1) {
        p.error = Error::kOffsetOutOfRange;  // not an offset, and not "none" (-1)
        continue;
      }
      if (p.metadata.size() > kMaxCommitMetadataBytes) {
        p.error = Error::kOffsetMetadataTooLarge;
        continue;
      }
      ++state->pending;
      auto done = [state, t, i](Status status) {
        state->services.loop.post([state, t, i, status = std::move(status)] {
          state->topics[t].partitions[i].error = from_status(status);
          if (--state->pending == 0) state->finish();
        });
      };
      if (p.offset == -1) {
        request.services.broker.forget_offset(state->topics[t].name, group, PartitionId(p.index), std::move(done));
      } else {
        request.services.broker.store_offset(state->topics[t].name, group, PartitionId(p.index),
                                             Offset(static_cast<uint64_t>(p.offset)), std::move(p.metadata),
                                             std::move(done));
      }
    }
  }
  if (--state->pending == 0) state->finish();
  return true;
}

bool handle_offset_fetch(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string group(r.str());
  Broker& broker = request.services.broker;
  // topic → partitions asked for, in request order.
  std::vector<std::pair<std::string, std::vector<int32_t>>> topics;
  auto n = r.nullable_array(2);
  if (n) {
    for (int32_t i = 0; i < *n && !r.failed(); ++i) {
      auto& [name, partitions] = topics.emplace_back(std::string(r.str()), std::vector<int32_t>());
      const int32_t m = r.array(4);
      for (int32_t j = 0; j < m && !r.failed(); ++j) partitions.push_back(r.i32());
      r.tags();
    }
  } else if (version < 2) {
    return false;
  }
  if (version >= 7) r.boolean();  // require stable: no transactions, so every offset is stable
  r.tags();
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
  Writer w(frame, request.flexible());
  if (version >= 3) w.i32(0);
  w.array(static_cast<int32_t>(topics.size()));
  const Error group_error = member ? Error::kNone : Error::kGroupAuthorizationFailed;
  for (const auto& [name, partitions] : topics) {
    const Error topic_error = group_error != Error::kNone                    ? group_error
                              : principal.allows(auth::Right::kRead, name) ? Error::kNone
                                                                           : Error::kTopicAuthorizationFailed;
    if (topic_error != Error::kNone) request.services.metrics.error(ApiKey::kOffsetFetch, topic_error);
    w.str(name);
    w.array(static_cast<int32_t>(partitions.size()));
    for (int32_t p : partitions) {
      std::optional<GroupOffset> kept;
      if (topic_error == Error::kNone && !group.empty()) {
        auto found = broker.commit_of(name, group, PartitionId(p));
        if (found.ok()) kept = std::move(*found);
      }
      // Never committed, or an unknown topic: -1 and no error, as Kafka answers.
      w.i32(p);
      w.i64(kept ? static_cast<int64_t>(kept->committed.value) : -1);
      if (version >= 5) w.i32(-1);  // leader epoch
      w.nullable_str(kept ? std::string_view(kept->metadata) : std::string_view());
      w.i16(code(topic_error));
      w.tags();
    }
    w.tags();
  }
  if (version >= 2) w.i16(code(group_error));
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
