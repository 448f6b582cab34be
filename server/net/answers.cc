#include "server/net/answers.h"

#include <cstdint>

#include "server/net/wire_convert.h"

namespace streamd {
namespace {

v1::Response response_to(const v1::Request& req) {
  v1::Response response;
  response.set_id(req.id());
  return response;
}

}  // namespace

v1::Response error_response(uint64_t id, const Status& status) {
  v1::Response response;
  response.set_id(id);
  error_to_wire(status, response.mutable_error());
  return response;
}

v1::Response answer_create_stream(Broker& broker, const v1::Request& req) {
  const auto& r = req.create_stream();
  bool created = false;
  auto result = broker.create_stream(r.name(), policy_from_wire(r.policy()), r.if_not_exists(), &created);
  if (!result.ok()) return error_response(req.id(), result.status());
  v1::Response response = response_to(req);
  auto* body = response.mutable_create_stream();
  body->set_name(result->name);
  policy_to_wire(result->policy, body->mutable_policy());
  body->set_created(created);
  return response;
}

v1::Response answer_delete_stream(Broker& broker, const v1::Request& req) {
  const auto& r = req.delete_stream();
  bool deleted = false;
  Status s = broker.delete_stream(r.name(), r.if_exists(), &deleted);
  if (!s.ok()) return error_response(req.id(), s);
  v1::Response response = response_to(req);
  response.mutable_delete_stream()->set_name(r.name());
  response.mutable_delete_stream()->set_deleted(deleted);
  return response;
}

v1::Response answer_alter_stream(Broker& broker, const v1::Request& req) {
  const auto& r = req.alter_stream();
  auto policy = broker.alter_stream(r.name(), policy_change_from_wire(r), r.validate_only());
  if (!policy.ok()) return error_response(req.id(), policy.status());
  v1::Response response = response_to(req);
  response.mutable_alter_stream()->set_name(r.name());
  policy_to_wire(*policy, response.mutable_alter_stream()->mutable_policy());
  return response;
}

v1::Response answer_trim(Broker& broker, const v1::Request& req) {
  const auto& r = req.trim();
  auto first = broker.trim(r.stream(), PartitionId(r.partition()), Offset(r.before()));
  if (!first.ok()) return error_response(req.id(), first.status());
  v1::Response response = response_to(req);
  response.mutable_trim()->set_partition(r.partition());
  response.mutable_trim()->set_first(first->value);
  return response;
}

v1::Response answer_compact(Broker& broker, const v1::Request& req) {
  const auto& r = req.compact();
  auto result = broker.compact(r.stream(), PartitionId(r.partition()));
  if (!result.ok()) return error_response(req.id(), result.status());
  v1::Response response = response_to(req);
  auto* body = response.mutable_compact();
  body->set_partition(r.partition());
  body->set_scanned(result->scanned);
  body->set_kept(result->kept);
  body->set_dropped(result->dropped);
  return response;
}

v1::Response answer_init_producer(Broker& broker, const v1::Request& req) {
  const auto& r = req.init_producer();
  std::optional<ProducerIdentity> current;
  if (r.has_current()) {
    if (r.epoch() < 0 || r.epoch() > INT16_MAX) {
      return error_response(req.id(), Status(Code::kProtocolError, "an epoch is between 0 and 32767",
                                             {{"epoch", std::to_string(r.epoch())}}));
    }
    current = ProducerIdentity{r.producer_id(), static_cast<int16_t>(r.epoch())};
  }
  auto identity = broker.init_producer(current);
  if (!identity.ok()) return error_response(req.id(), identity.status());
  v1::Response response = response_to(req);
  response.mutable_init_producer()->set_producer_id(identity->id);
  response.mutable_init_producer()->set_epoch(identity->epoch);
  return response;
}

v1::Response answer_list_streams(const Broker& broker, const v1::Request& req, const auth::Principal& principal) {
  v1::Response response = response_to(req);
  auto* body = response.mutable_list_streams();
  for (const StreamSummary& s : broker.list_streams()) {
    if (!principal.allows(auth::Right::kRead, s.name)) continue;  // docs/SECURITY.md: no more is shown
    auto* ws = body->add_streams();
    ws->set_name(s.name);
    ws->set_partitions(s.partitions);
  }
  return response;
}

v1::Response answer_describe_stream(const Broker& broker, const v1::Request& req) {
  auto d = broker.describe_stream(req.describe_stream().name());
  if (!d.ok()) return error_response(req.id(), d.status());
  v1::Response response = response_to(req);
  description_to_wire(*d, response.mutable_describe_stream());
  return response;
}

v1::Response answer_bounds(const Broker& broker, const v1::Request& req) {
  const auto& r = req.bounds();
  auto b = broker.ends(r.stream(), PartitionId(r.partition()));
  if (!b.ok()) return error_response(req.id(), b.status());
  v1::Response response = response_to(req);
  auto* body = response.mutable_bounds();
  body->set_partition(r.partition());
  body->set_first(b->bounds.first.value);
  body->set_next(b->bounds.next.value);
  body->set_last_stable(b->last_stable.value);
  return response;
}

v1::Response answer_peek(const Broker& broker, const v1::Request& req) {
  const auto& r = req.peek();
  auto p = broker.peek(r.stream(), PartitionId(r.partition()));
  if (!p.ok()) return error_response(req.id(), p.status());
  v1::Response response = response_to(req);
  auto* body = response.mutable_peek();
  if (p->has_value() && !(*p)->entries.empty()) {
    entry_to_wire(PartitionId(r.partition()), (*p)->entries.back(), body->mutable_entry());
  }
  return response;
}

v1::Response answer_offset_at(const Broker& broker, const v1::Request& req) {
  const auto& r = req.offset_at();
  auto o = broker.offset_at(r.stream(), PartitionId(r.partition()), Timestamp(r.time_us()));
  if (!o.ok()) return error_response(req.id(), o.status());
  v1::Response response = response_to(req);
  response.mutable_offset_at()->set_partition(r.partition());
  response.mutable_offset_at()->set_offset(o->value);
  return response;
}

v1::Response answer_committed(const Broker& broker, const v1::Request& req) {
  const auto& r = req.committed();
  auto o = broker.committed(r.stream(), r.group(), PartitionId(r.partition()));
  if (!o.ok()) return error_response(req.id(), o.status());
  v1::Response response = response_to(req);
  response.mutable_committed()->set_partition(r.partition());
  response.mutable_committed()->set_next(o->value);
  return response;
}

v1::Response answer_list_groups(const Broker& broker, const v1::Request& req) {
  auto groups = broker.list_groups(req.list_groups().stream());
  if (!groups.ok()) return error_response(req.id(), groups.status());
  v1::Response response = response_to(req);
  auto* body = response.mutable_list_groups();
  for (const GroupOffset& g : *groups) {
    auto* wg = body->add_groups();
    wg->set_group(g.group);
    wg->set_partition(g.partition.value);
    wg->set_committed(g.committed.value);
    wg->set_next(g.next.value);
    wg->set_lag(g.lag);
  }
  return response;
}

v1::Response answer_health(const Broker& broker, const v1::Request& req,
                           std::chrono::steady_clock::time_point started) {
  v1::Response response = response_to(req);
  auto* body = response.mutable_health();
  body->set_status("ok");
  body->set_version(STREAMD_VERSION);
  body->set_uptime_s(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()));
  body->set_streams(static_cast<uint32_t>(broker.stream_count()));
  return response;
}

}  // namespace streamd
