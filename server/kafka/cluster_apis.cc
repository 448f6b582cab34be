// DescribeCluster 0-1, DescribeLogDirs 0-4, ElectLeaders 0-2 and DescribeProducers 0 (docs/KAFKA.md
// §APIs): what admin consoles ask of a cluster, answered truthfully for one broker. The cluster is
// this broker, its controller too; its one log directory is the file engine's data_dir (or the
// engine's kind); every partition already has its only possible leader (ELECTION_NOT_NEEDED); and
// no producer is listed: the partitions' idempotent producer states are not exposed through it yet.
// Describing the cluster takes nothing; a topic's log dirs, elections and producers take a right on
// it (TOPIC_AUTHORIZATION_FAILED otherwise), a request for every topic shows those the principal may
// see.
#include <sys/statvfs.h>

#include <optional>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

constexpr int32_t kOperationsOmitted = -2147483648;  // INT32_MIN: authorized operations not asked for

struct TopicPartitions {
  std::string name;
  std::vector<int32_t> partitions;
};

// A nullable array of (topic, partitions): nullopt for "every topic".
std::optional<std::vector<TopicPartitions>> read_topic_partitions(Reader& r) {
  auto n = r.nullable_array(2);
  if (!n) return std::nullopt;
  std::vector<TopicPartitions> out;
  for (int32_t i = 0; i < *n && !r.failed(); ++i) {
    TopicPartitions& t = out.emplace_back();
    t.name = std::string(r.str());
    const int32_t m = r.array(4);
    for (int32_t j = 0; j < m && !r.failed(); ++j) t.partitions.push_back(r.i32());
    r.tags();
  }
  return out;
}

// Every partition of every stream the principal may see.
std::vector<TopicPartitions> all_visible(const Request& request) {
  std::vector<TopicPartitions> out;
  for (const StreamSummary& s : request.services.broker.list_streams()) {
    if (!request.principal.allows_any(s.name)) continue;
    TopicPartitions& t = out.emplace_back();
    t.name = s.name;
    for (int32_t p = 0; p < s.partitions; ++p) t.partitions.push_back(p);
  }
  return out;
}

}  // namespace

bool handle_describe_cluster(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  r.boolean();  // include cluster authorized operations: not computed
  int8_t endpoint_type = 1;  // brokers
  if (version >= 1) endpoint_type = r.i8();
  r.tags();
  if (r.failed()) return false;
  const KafkaOptions& o = request.services.options;
  // Only brokers are endpoints here: there is no separate controller listener to describe.
  const Error error = endpoint_type == 1 ? Error::kNone : Error::kUnsupportedEndpointType;
  request.services.metrics.error(ApiKey::kDescribeCluster, error);
  std::string frame = request.responder.start();
  Writer w(frame, true);
  w.i32(0);  // throttle time
  w.i16(code(error));
  w.nullable_str(error == Error::kNone ? std::nullopt
                                       : std::optional<std::string_view>("only broker endpoints are described"));
  if (version >= 1) w.i8(endpoint_type);
  w.str("streamd");  // cluster id, as Metadata answers
  w.i32(error == Error::kNone ? o.node_id : -1);  // the controller: this broker
  w.array(error == Error::kNone ? 1 : 0);
  if (error == Error::kNone) {
    w.i32(o.node_id);
    w.str(request.advertised.host);
    w.i32(request.advertised.port);
    w.nullable_str(std::nullopt);  // rack
    w.tags();
  }
  w.i32(kOperationsOmitted);
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_describe_log_dirs(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  auto asked = read_topic_partitions(r);
  r.tags();
  if (r.failed()) return false;
  std::vector<TopicPartitions> topics = asked ? std::move(*asked) : all_visible(request);
  const KafkaOptions& o = request.services.options;
  Broker& broker = request.services.broker;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);  // throttle time
  if (version >= 3) w.i16(0);
  w.array(1);  // one log directory
  w.i16(0);
  w.str(o.log_dir);
  // A partition is listed when it exists and the principal may see it; Kafka leaves the rest out.
  std::vector<std::pair<std::string, std::vector<PartitionDescription>>> found;
  for (const TopicPartitions& t : topics) {
    if (!request.principal.allows_any(t.name)) continue;
    auto d = broker.describe_stream(t.name);
    if (!d.ok()) continue;
    std::vector<PartitionDescription> parts;
    for (int32_t p : t.partitions) {
      if (p >= 0 && static_cast<size_t>(p) < d->partitions.size()) parts.push_back(d->partitions[static_cast<size_t>(p)]);
    }
    if (!parts.empty()) found.emplace_back(t.name, std::move(parts));
  }
  w.array(static_cast<int32_t>(found.size()));
  for (const auto& [name, parts] : found) {
    w.str(name);
    w.array(static_cast<int32_t>(parts.size()));
    for (const PartitionDescription& p : parts) {
      w.i32(p.partition.value);
      w.i64(static_cast<int64_t>(p.bytes));
      w.i64(0);        // offset lag: no future replica is catching up
      w.boolean(false);  // is future key
      w.tags();
    }
    w.tags();
  }
  if (version >= 4) {
    int64_t total = -1;
    int64_t usable = -1;
    struct statvfs fs {};
    if (o.log_dir_on_disk && ::statvfs(o.log_dir.c_str(), &fs) == 0) {
      total = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
      usable = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    }
    w.i64(total);
    w.i64(usable);
  }
  w.tags();
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_elect_leaders(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  if (version >= 1) r.i8();  // election type: preferred or unclean, alike for one replica
  auto asked = read_topic_partitions(r);
  r.i32();  // timeout
  r.tags();
  if (r.failed()) return false;
  // Every topic: Kafka answers the partitions whose election it ran, which here is none.
  std::vector<TopicPartitions> topics = asked ? std::move(*asked) : std::vector<TopicPartitions>();
  Broker& broker = request.services.broker;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);
  if (version >= 1) w.i16(0);
  w.array(static_cast<int32_t>(topics.size()));
  for (const TopicPartitions& t : topics) {
    const bool allowed = request.principal.allows(auth::Right::kAdmin, t.name);
    auto d = broker.describe_stream(t.name);
    w.str(t.name);
    w.array(static_cast<int32_t>(t.partitions.size()));
    for (int32_t p : t.partitions) {
      Error e = Error::kElectionNotNeeded;
      std::string_view message = "this broker is the partition's only replica, and its leader";
      if (!allowed) {
        e = Error::kTopicAuthorizationFailed;
        message = "electing leaders takes the admin right on the topic";
      } else if (!d.ok() || p < 0 || static_cast<size_t>(p) >= d->partitions.size()) {
        e = Error::kUnknownTopicOrPartition;
        message = "no such topic or partition";
      }
      request.services.metrics.error(ApiKey::kElectLeaders, e);
      w.i32(p);
      w.i16(code(e));
      w.nullable_str(message);
      w.tags();
    }
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_describe_producers(Request& request) {
  Reader& r = request.body;
  std::vector<TopicPartitions> topics;
  const int32_t n = r.array(2);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    TopicPartitions& t = topics.emplace_back();
    t.name = std::string(r.str());
    const int32_t m = r.array(4);
    for (int32_t j = 0; j < m && !r.failed(); ++j) t.partitions.push_back(r.i32());
    r.tags();
  }
  r.tags();
  if (r.failed()) return false;
  Broker& broker = request.services.broker;
  std::string frame = request.responder.start();
  Writer w(frame, true);
  w.i32(0);
  w.array(static_cast<int32_t>(topics.size()));
  for (const TopicPartitions& t : topics) {
    const bool allowed = request.principal.allows(auth::Right::kRead, t.name);
    auto d = broker.describe_stream(t.name);
    w.str(t.name);
    w.array(static_cast<int32_t>(t.partitions.size()));
    for (int32_t p : t.partitions) {
      Error e = Error::kNone;
      if (!allowed) {
        e = Error::kTopicAuthorizationFailed;
      } else if (!d.ok() || p < 0 || static_cast<size_t>(p) >= d->partitions.size()) {
        e = Error::kUnknownTopicOrPartition;
      }
      request.services.metrics.error(ApiKey::kDescribeProducers, e);
      w.i32(p);
      w.i16(code(e));
      w.nullable_str(std::nullopt);
      w.array(0);  // active producers: not exposed yet
      w.tags();
    }
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
