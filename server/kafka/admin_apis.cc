// CreateTopics 0-4, DeleteTopics 0-3, DeleteRecords 0-1 (→ trim) and CreatePartitions 0-3 (always
// refused: a stream's partition count is fixed) (docs/KAFKA.md §Admin). Creating, deleting and trimming
// sync files: they run on `blocking` and their answers come back to the loop. One broker keeps one copy
// of everything, so a replication factor other than -1 or 1 is refused, as are replica assignments
// naming another broker. Creating, deleting and trimming a topic take the admin right on it
// (TOPIC_AUTHORIZATION_FAILED otherwise). The config APIs are config_apis.cc's.
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/kafka/offload.h"
#include "server/kafka/topic_configs.h"
#include "server/storage/stream_name.h"

namespace streamd::kafka {
namespace {

struct NewTopic {
  std::string name;
  Policy policy;
  Error error = Error::kNone;
  std::string message;
};

}  // namespace

bool handle_create_topics(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const KafkaOptions& options = request.services.options;
  auto topics = std::make_shared<std::vector<NewTopic>>(static_cast<size_t>(r.count(12)));
  for (NewTopic& t : *topics) {
    t.name = std::string(r.string());
    const int32_t partitions = r.i32();
    const int16_t replication = r.i16();
    t.policy = options.default_policy;
    const int32_t assignments = r.count(8);
    bool foreign_replica = false;
    for (int32_t i = 0; i < assignments && !r.failed(); ++i) {
      r.i32();  // partition index
      const int32_t replicas = r.count(4);
      for (int32_t j = 0; j < replicas && !r.failed(); ++j) foreign_replica |= r.i32() != options.node_id;
    }
    const int32_t configs = r.count(4);
    PolicyChange change;
    for (int32_t i = 0; i < configs && !r.failed(); ++i) {
      const std::string_view name = r.string();
      const auto value = r.nullable_string();
      if (t.error != Error::kNone || r.failed()) continue;
      if (!value) {
        t.error = Error::kInvalidConfig;
        t.message = "config " + std::string(name) + " needs a value";
      } else if (auto refused = set_topic_config(name, *value, change)) {
        t.error = refused->error;
        t.message = std::move(refused->message);
      }
    }
    t.policy = change.overlaid(t.policy);
    if (t.error != Error::kNone) continue;
    if (!request.principal.allows(auth::Right::kAdmin, t.name)) {
      t.error = Error::kTopicAuthorizationFailed;
      t.message = "creating a topic takes the admin right on it";
      continue;
    }
    // -1 means "the broker's default", at every version (librdkafka and kafkajs send it).
    if (assignments > 0) {
      if (partitions != -1 || replication != -1) {
        t.error = Error::kInvalidRequest;
        t.message = "replica assignments go with -1 partitions and replication factor";
      } else if (foreign_replica) {
        t.error = Error::kInvalidReplicaAssignment;
        t.message = "only broker " + std::to_string(options.node_id) + " exists";
      } else {
        t.policy.partitions = assignments;
      }
    } else if (partitions == 0 || partitions < -1) {
      t.error = Error::kInvalidPartitions;
      t.message = "partitions must be positive (or -1 for the default)";
    } else if (partitions > 0) {
      t.policy.partitions = partitions;
    }
    if (t.error == Error::kNone && replication != -1 && replication != 1) {
      t.error = Error::kInvalidReplicationFactor;
      t.message = "this broker keeps one copy: replication factor must be 1 (or -1)";
    }
  }
  r.i32();  // timeout: creation is synchronous
  const bool validate_only = version >= 1 && r.boolean();
  if (r.failed()) return false;
  Services& services = request.services;
  offload(request, [&services, topics, version, validate_only, responder = request.responder] {
    for (NewTopic& t : *topics) {
      if (t.error != Error::kNone) continue;
      Status s = validate_stream_name(t.name);
      if (s.ok()) s = t.policy.validate();
      if (s.ok() && !validate_only) {
        auto created = services.broker.create_stream(t.name, t.policy, false);
        if (!created.ok()) s = created.status();
      } else if (s.ok() && services.broker.describe_stream(t.name).ok()) {
        s = Status::of(Code::kStreamExists, {{"name", t.name}});
      }
      if (!s.ok()) {
        t.error = from_status(s);
        t.message = s.to_string();
      }
    }
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 2) w.i32(0);
    w.array_count(static_cast<int32_t>(topics->size()));
    for (const NewTopic& t : *topics) {
      services.metrics.error(ApiKey::kCreateTopics, t.error);
      w.string(t.name);
      w.i16(code(t.error));
      if (version >= 1) {
        w.nullable_string(t.error == Error::kNone ? std::nullopt : std::optional<std::string_view>(t.message));
      }
    }
    return frame;
  });
  return true;
}

bool handle_delete_topics(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  auto names = std::make_shared<std::vector<std::pair<std::string, bool>>>();  // name, may delete
  const int32_t n = r.count(2);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    std::string name(r.string());
    const bool allowed = request.principal.allows(auth::Right::kAdmin, name);
    names->emplace_back(std::move(name), allowed);
  }
  r.i32();  // timeout
  if (r.failed()) return false;
  Services& services = request.services;
  offload(request, [&services, names, version, responder = request.responder] {
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 1) w.i32(0);
    w.array_count(static_cast<int32_t>(names->size()));
    for (const auto& [name, allowed] : *names) {
      const Error e = allowed ? from_status(services.broker.delete_stream(name)) : Error::kTopicAuthorizationFailed;
      services.metrics.error(ApiKey::kDeleteTopics, e);
      w.string(name);
      w.i16(code(e));
    }
    return frame;
  });
  return true;
}

bool handle_delete_records(Request& request) {
  Reader& r = request.body;
  struct Part {
    int32_t index;
    int64_t offset;
  };
  struct Topic {
    std::string name;
    std::vector<Part> parts;
    bool allowed = false;
  };
  auto topics = std::make_shared<std::vector<Topic>>();
  const int32_t n = r.count(6);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    auto& [name, parts, allowed] = topics->emplace_back(Topic{std::string(r.string()), {}, false});
    allowed = request.principal.allows(auth::Right::kAdmin, name);
    const int32_t m = r.count(12);
    for (int32_t j = 0; j < m && !r.failed(); ++j) {
      const int32_t index = r.i32();
      parts.push_back({index, r.i64()});
    }
  }
  r.i32();  // timeout
  if (r.failed()) return false;
  Services& services = request.services;
  offload(request, [&services, topics, responder = request.responder] {
    std::string frame = responder.start();
    Writer w(frame);
    w.i32(0);
    w.array_count(static_cast<int32_t>(topics->size()));
    for (const auto& [name, parts, allowed] : *topics) {
      w.string(name);
      w.array_count(static_cast<int32_t>(parts.size()));
      for (const Part& p : parts) {
        Error e = Error::kNone;
        int64_t low = -1;
        Offset before(static_cast<uint64_t>(p.offset));
        if (!allowed) {
          e = Error::kTopicAuthorizationFailed;
        } else if (p.offset < -1) {
          e = Error::kOffsetOutOfRange;
        } else {
          if (p.offset == -1) {
            // -1: everything up to the high watermark.
            auto bounds = services.broker.bounds(name, PartitionId(p.index));
            if (bounds.ok()) before = bounds->next;
          }
          auto first = services.broker.trim(name, PartitionId(p.index), before);
          if (first.ok()) {
            low = static_cast<int64_t>(first->value);
          } else {
            e = from_status(first.status());
          }
        }
        services.metrics.error(ApiKey::kDeleteRecords, e);
        w.i32(p.index);
        w.i64(low);
        w.i16(code(e));
      }
    }
    return frame;
  });
  return true;
}

bool handle_create_partitions(Request& request) {
  Reader& r = request.body;
  struct Topic {
    std::string name;
    int32_t count = 0;
  };
  std::vector<Topic> topics;
  const int32_t n = r.array(6);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    Topic& t = topics.emplace_back();
    t.name = std::string(r.str());
    t.count = r.i32();
    if (auto assignments = r.nullable_array(1)) {
      for (int32_t j = 0; j < *assignments && !r.failed(); ++j) {
        const int32_t brokers = r.array(4);
        for (int32_t k = 0; k < brokers && !r.failed(); ++k) r.i32();
        r.tags();
      }
    }
    r.tags();
  }
  r.i32();      // timeout
  r.boolean();  // validate only: nothing is ever changed
  r.tags();
  if (r.failed()) return false;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);
  w.array(static_cast<int32_t>(topics.size()));
  for (const Topic& t : topics) {
    Error e = Error::kInvalidPartitions;
    std::string message;
    auto d = request.services.broker.describe_stream(t.name);
    if (!request.principal.allows(auth::Right::kAdmin, t.name)) {
      e = Error::kTopicAuthorizationFailed;
      message = "adding partitions takes the admin right on the topic";
    } else if (!d.ok()) {
      e = from_status(d.status());
      message = d.status().to_string();
    } else if (t.count == d->policy.partitions) {
      message = "topic " + t.name + " already has " + std::to_string(t.count) + " partitions";
    } else {
      // docs/SEMANTICS.md: a key's partition is fnv1a32(key) % partitions, for the stream's life.
      message = "topic " + t.name + " has " + std::to_string(d->policy.partitions) +
                " partitions, fixed for its life: adding some would move keys to other partitions";
    }
    request.services.metrics.error(ApiKey::kCreatePartitions, e);
    w.str(t.name);
    w.i16(code(e));
    w.nullable_str(message);
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
