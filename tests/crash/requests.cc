#include "tests/crash/requests.h"

namespace streamd::crash {

bool answered(const v1::Response& response) {
  return response.has_error() || response.body_case() != v1::Response::BODY_NOT_SET;
}

v1::Request append_of(const Batch& batch) {
  v1::Request request;
  auto* body = request.mutable_append();
  body->set_stream(batch.stream);
  for (uint32_t i = 0; i < batch.count; ++i) {
    auto* r = body->add_records();
    r->set_key(key_for(batch.id));
    r->set_payload(make_payload({batch.id, i, batch.count, batch.stream, batch.incarnation}));
    if (batch.id % 5 == 0) {
      auto* h = r->add_headers();
      h->set_name("batch");
      h->set_value(std::to_string(batch.id));
    }
  }
  if (batch.stamp.producer_id >= 0) {
    body->set_partition(batch.stamp.partition);
    body->mutable_producer()->set_producer_id(batch.stamp.producer_id);
    body->mutable_producer()->set_epoch(batch.stamp.epoch);
    body->mutable_producer()->set_sequence(batch.stamp.sequence);
  }
  return request;
}

v1::Request init_producer() {
  v1::Request request;
  request.mutable_init_producer();
  return request;
}

v1::Request read_of(const std::string& stream, int32_t partition, uint64_t from, int32_t max_records,
                    uint32_t wait_ms) {
  v1::Request request;
  auto* body = request.mutable_read();
  body->set_stream(stream);
  auto* c = body->add_cursors();
  c->set_partition(partition);
  c->set_from(from);
  body->set_max_records(max_records);
  body->set_max_bytes(8 << 20);
  body->set_wait_ms(wait_ms);
  return request;
}

v1::Request bounds_of(const std::string& stream, int32_t partition) {
  v1::Request request;
  request.mutable_bounds()->set_stream(stream);
  request.mutable_bounds()->set_partition(partition);
  return request;
}

v1::Request trim_of(const std::string& stream, int32_t partition, uint64_t before) {
  v1::Request request;
  auto* body = request.mutable_trim();
  body->set_stream(stream);
  body->set_partition(partition);
  body->set_before(before);
  return request;
}

v1::Request commit_of(const std::string& stream, const std::string& group, int32_t partition, uint64_t next) {
  v1::Request request;
  auto* body = request.mutable_commit();
  body->set_stream(stream);
  body->set_group(group);
  body->set_partition(partition);
  body->set_next(next);
  return request;
}

v1::Request committed_of(const std::string& stream, const std::string& group, int32_t partition) {
  v1::Request request;
  auto* body = request.mutable_committed();
  body->set_stream(stream);
  body->set_group(group);
  body->set_partition(partition);
  return request;
}

v1::Request list_groups_of(const std::string& stream) {
  v1::Request request;
  request.mutable_list_groups()->set_stream(stream);
  return request;
}

v1::Request list_streams() {
  v1::Request request;
  request.mutable_list_streams();
  return request;
}

v1::Request describe_of(const std::string& stream) {
  v1::Request request;
  request.mutable_describe_stream()->set_name(stream);
  return request;
}

v1::Request create_of(const std::string& stream, int32_t partitions, int64_t segment_bytes) {
  v1::Request request;
  auto* body = request.mutable_create_stream();
  body->set_name(stream);
  body->mutable_policy()->set_partitions(partitions);
  body->mutable_policy()->set_segment_bytes(segment_bytes);
  return request;
}

v1::Request delete_of(const std::string& stream) {
  v1::Request request;
  request.mutable_delete_stream()->set_name(stream);
  return request;
}

}  // namespace streamd::crash
