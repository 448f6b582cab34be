// Metadata 0-7: this broker is every partition's leader, only replica and whole ISR. A topic asked
// for by name that does not exist is created with the default policy when the request allows it
// (v4+'s flag; always before v4, as Kafka does), the broker's auto_create_streams is on and the
// principal may write (or administer) the name. A listing of every topic shows those the principal
// holds any right on; one named without any is TOPIC_AUTHORIZATION_FAILED.
#include <optional>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

constexpr std::string_view kClusterId = "streamd";

struct MetadataRequest {
  std::optional<std::vector<std::string>> topics;  // nullopt: every topic
  bool allow_auto_create = true;
};

bool decode(Reader& r, int16_t version, MetadataRequest& out) {
  auto n = r.array_count(2);
  if (n) {
    out.topics.emplace();
    for (int32_t i = 0; i < *n; ++i) out.topics->emplace_back(r.string());
    // v0 has no null: an empty list means every topic.
    if (version == 0 && out.topics->empty()) out.topics.reset();
  } else if (version == 0) {
    return false;
  }
  if (version >= 4) out.allow_auto_create = r.boolean();
  return !r.failed();
}

void write_topic(Writer& w, int16_t version, const Services& services, std::string_view name, Error error,
                 const StreamDescription* d) {
  w.i16(code(error));
  w.string(name);
  if (version >= 1) w.boolean(false);  // is_internal
  if (d == nullptr) {
    w.array_count(0);
    return;
  }
  w.array_count(static_cast<int32_t>(d->partitions.size()));
  const int32_t node = services.options.node_id;
  for (const PartitionDescription& p : d->partitions) {
    w.i16(0);
    w.i32(p.partition.value);
    w.i32(node);                  // leader
    if (version >= 7) w.i32(0);   // leader epoch: there is never another leader
    w.array_count(1);
    w.i32(node);  // replicas
    w.array_count(1);
    w.i32(node);  // in-sync replicas
    if (version >= 5) w.array_count(0);  // offline replicas
  }
}

bool may_create(const auth::Principal& principal, const std::string& name) {
  return principal.allows(auth::Right::kWrite, name) || principal.allows(auth::Right::kAdmin, name);
}

// Runs on the loop, or on the blocking executor when topics may be created.
std::string answer(Services& services, const Advertised& advertised, const auth::Principal& principal,
                   int32_t correlation_id, int16_t version, const MetadataRequest& req, bool create) {
  Broker& broker = services.broker;
  std::string frame = start_response(correlation_id);
  Writer w(frame);
  if (version >= 3) w.i32(0);  // throttle time
  w.array_count(1);
  w.i32(services.options.node_id);
  w.string(advertised.host);
  w.i32(advertised.port);
  if (version >= 1) w.nullable_string(std::nullopt);  // rack
  if (version >= 2) w.nullable_string(kClusterId);
  if (version >= 1) w.i32(services.options.node_id);  // controller

  std::vector<std::string> names;
  if (req.topics) {
    names = *req.topics;
  } else {
    for (const StreamSummary& s : broker.list_streams()) {
      if (principal.allows_any(s.name)) names.push_back(s.name);
    }
  }
  w.array_count(static_cast<int32_t>(names.size()));
  for (const std::string& name : names) {
    if (!principal.allows_any(name)) {
      services.metrics.error(ApiKey::kMetadata, Error::kTopicAuthorizationFailed);
      write_topic(w, version, services, name, Error::kTopicAuthorizationFailed, nullptr);
      continue;
    }
    auto d = broker.describe_stream(name);
    if (!d.ok() && d.status().code() == Code::kStreamNotFound && create && may_create(principal, name)) {
      auto created = broker.create_stream(name, services.options.default_policy, true);
      if (created.ok() || created.status().code() != Code::kStreamNotFound) d = std::move(created);
    }
    if (d.ok()) {
      write_topic(w, version, services, name, Error::kNone, &*d);
    } else {
      const Error e = from_status(d.status());
      services.metrics.error(ApiKey::kMetadata, e);
      write_topic(w, version, services, name, e, nullptr);
    }
  }
  return frame;
}

}  // namespace

bool handle_metadata(Request& request) {
  auto req = std::make_shared<MetadataRequest>();
  if (!decode(request.body, request.version(), *req)) return false;
  Services& services = request.services;
  bool missing = false;
  if (req->topics && req->allow_auto_create && services.options.auto_create_topics) {
    for (const std::string& name : *req->topics) {
      if (!may_create(request.principal, name)) continue;
      auto d = services.broker.describe_stream(name);
      if (!d.ok() && d.status().code() == Code::kStreamNotFound) missing = true;
    }
  }
  const int32_t correlation_id = request.header.correlation_id;
  const int16_t version = request.version();
  if (!missing) {
    request.responder.send(answer(services, request.advertised, request.principal, correlation_id, version, *req, false));
    return true;
  }
  // Creating a stream syncs files: never on the loop.
  services.blocking.post([&services, responder = request.responder, advertised = request.advertised,
                          principal = request.principal, correlation_id, version, req] {
    std::string frame = answer(services, advertised, principal, correlation_id, version, *req, true);
    services.loop.post([responder, frame = std::move(frame)]() mutable { responder.send(std::move(frame)); });
  });
  return true;
}

}  // namespace streamd::kafka
