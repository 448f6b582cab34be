#include "client/admin.h"

#include "client/wire.h"

namespace streamd::client {

Result<CreateResult> Admin::create_stream(const std::string& name, const Policy& policy, bool if_not_exists) {
  v1::Request request;
  auto* body = request.mutable_create_stream();
  body->set_name(name);
  wire::to_proto(policy, body->mutable_policy());
  body->set_if_not_exists(if_not_exists);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  const auto& answer = response.create_stream();
  return CreateResult{answer.name(), wire::from_proto(answer.policy()), answer.created()};
}

Result<Policy> Admin::alter_stream(const std::string& name, const PolicyChange& change, bool validate_only) {
  v1::Request request;
  auto* body = request.mutable_alter_stream();
  body->set_name(name);
  if (change.partitions) body->set_partitions(*change.partitions);
  if (change.max_record_bytes) body->set_max_record_bytes(*change.max_record_bytes);
  if (change.retain_for) body->set_retain_for_ms(change.retain_for->count());
  if (change.retain_bytes) body->set_retain_bytes(*change.retain_bytes);
  if (change.max_bytes) body->set_max_bytes(*change.max_bytes);
  if (change.block_timeout) body->set_block_timeout_ms(change.block_timeout->count());
  if (change.segment_bytes) body->set_segment_bytes(*change.segment_bytes);
  if (change.compact_after) body->set_compact_after_ms(change.compact_after->count());
  if (change.timestamp_type) body->set_timestamp_type(static_cast<v1::TimestampType>(*change.timestamp_type));
  body->set_validate_only(validate_only);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return wire::from_proto(response.alter_stream().policy());
}

Result<bool> Admin::delete_stream(const std::string& name, bool if_exists) {
  v1::Request request;
  request.mutable_delete_stream()->set_name(name);
  request.mutable_delete_stream()->set_if_exists(if_exists);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return response.delete_stream().deleted();
}

Result<std::vector<StreamSummary>> Admin::list_streams() {
  v1::Request request;
  request.mutable_list_streams();
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  std::vector<StreamSummary> out;
  for (const auto& s : response.list_streams().streams()) out.push_back({s.name(), s.partitions()});
  return out;
}

Result<StreamDescription> Admin::describe_stream(const std::string& name) {
  v1::Request request;
  request.mutable_describe_stream()->set_name(name);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  const auto& answer = response.describe_stream();
  StreamDescription out{answer.name(), wire::from_proto(answer.policy()), {}, answer.created_at_us()};
  for (const auto& p : answer.partitions()) {
    out.partitions.push_back({p.partition(), p.first(), p.next(), p.bytes(), p.segments(), p.in_rotation()});
  }
  return out;
}

Result<AppendResult> Admin::append(const std::string& stream, const std::vector<Record>& records) {
  v1::Request request;
  auto* body = request.mutable_append();
  body->set_stream(stream);
  for (const Record& r : records) wire::to_proto(r, body->add_records());
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return AppendResult{response.append().partition(), response.append().first(), response.append().last()};
}

Result<Bounds> Admin::bounds(const std::string& stream, int32_t partition) {
  v1::Request request;
  request.mutable_bounds()->set_stream(stream);
  request.mutable_bounds()->set_partition(partition);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return Bounds{response.bounds().partition(), response.bounds().first(), response.bounds().next(),
                response.bounds().last_stable()};
}

Result<std::optional<Entry>> Admin::peek(const std::string& stream, int32_t partition) {
  v1::Request request;
  request.mutable_peek()->set_stream(stream);
  request.mutable_peek()->set_partition(partition);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  if (!response.peek().has_entry()) return std::optional<Entry>();
  return std::optional<Entry>(wire::from_proto(response.peek().entry()));
}

Status Admin::commit(const std::string& stream, const std::string& group, int32_t partition, uint64_t next) {
  v1::Request request;
  auto* body = request.mutable_commit();
  body->set_stream(stream);
  body->set_group(group);
  body->set_partition(partition);
  body->set_next(next);
  return connection_.call(request, nullptr, timeout_);
}

Result<uint64_t> Admin::committed(const std::string& stream, const std::string& group, int32_t partition) {
  v1::Request request;
  auto* body = request.mutable_committed();
  body->set_stream(stream);
  body->set_group(group);
  body->set_partition(partition);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return response.committed().next();
}

Result<std::vector<GroupPartition>> Admin::list_groups(const std::string& stream) {
  v1::Request request;
  request.mutable_list_groups()->set_stream(stream);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  std::vector<GroupPartition> out;
  for (const auto& g : response.list_groups().groups()) {
    out.push_back({g.group(), g.partition(), g.committed(), g.next(), g.lag()});
  }
  return out;
}

Result<uint64_t> Admin::offset_at(const std::string& stream, int32_t partition, int64_t time_us) {
  v1::Request request;
  request.mutable_offset_at()->set_stream(stream);
  request.mutable_offset_at()->set_partition(partition);
  request.mutable_offset_at()->set_time_us(time_us);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return response.offset_at().offset();
}

Result<uint64_t> Admin::trim(const std::string& stream, int32_t partition, uint64_t before) {
  v1::Request request;
  request.mutable_trim()->set_stream(stream);
  request.mutable_trim()->set_partition(partition);
  request.mutable_trim()->set_before(before);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return response.trim().first();
}

Result<CompactResult> Admin::compact(const std::string& stream, int32_t partition) {
  v1::Request request;
  request.mutable_compact()->set_stream(stream);
  request.mutable_compact()->set_partition(partition);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  const auto& c = response.compact();
  return CompactResult{c.partition(), c.scanned(), c.kept(), c.dropped()};
}

Result<Health> Admin::health() {
  v1::Request request;
  request.mutable_health();
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  const auto& h = response.health();
  return Health{h.status(), h.version(), h.uptime_s(), h.streams()};
}

Result<ProducerIdentity> Admin::init_producer(const std::optional<ProducerIdentity>& current) {
  v1::Request request;
  auto* body = request.mutable_init_producer();
  if (current) {
    body->set_has_current(true);
    body->set_producer_id(current->id);
    body->set_epoch(current->epoch);
  }
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return ProducerIdentity{response.init_producer().producer_id(), response.init_producer().epoch()};
}

}  // namespace streamd::client
