#include "server/net/wire_convert.h"

#include <algorithm>

namespace streamd {

Policy policy_from_wire(const v1::Policy& p) {
  Policy out;
  out.partitions = p.partitions();
  out.max_record_bytes = p.max_record_bytes();
  out.retain_for = std::chrono::milliseconds(p.retain_for_ms());
  out.retain_bytes = p.retain_bytes();
  out.max_bytes = p.max_bytes();
  out.block_timeout = std::chrono::milliseconds(p.block_timeout_ms());
  out.segment_bytes = p.segment_bytes();
  out.compact_after = std::chrono::milliseconds(p.compact_after_ms());
  // Kept as sent: a value this broker does not know is refused by Policy::validate, naming the field.
  const int type = p.timestamp_type();
  out.timestamp_type = static_cast<TimestampType>(type < 0 || type > 255 ? 255 : type);
  return out;
}

void policy_to_wire(const Policy& p, v1::Policy* out) {
  out->set_partitions(p.partitions);
  out->set_max_record_bytes(p.max_record_bytes);
  out->set_retain_for_ms(p.retain_for.count());
  out->set_retain_bytes(p.retain_bytes);
  out->set_max_bytes(p.max_bytes);
  out->set_block_timeout_ms(p.block_timeout.count());
  out->set_segment_bytes(p.segment_bytes);
  out->set_compact_after_ms(p.compact_after.count());
  out->set_timestamp_type(static_cast<v1::TimestampType>(p.timestamp_type));
}

PolicyChange policy_change_from_wire(const v1::AlterStreamRequest& r) {
  using std::chrono::milliseconds;
  PolicyChange out;
  if (r.has_partitions()) out.partitions = r.partitions();
  if (r.has_max_record_bytes()) out.max_record_bytes = r.max_record_bytes();
  if (r.has_retain_for_ms()) out.retain_for = milliseconds(r.retain_for_ms());
  if (r.has_retain_bytes()) out.retain_bytes = r.retain_bytes();
  if (r.has_max_bytes()) out.max_bytes = r.max_bytes();
  if (r.has_block_timeout_ms()) out.block_timeout = milliseconds(r.block_timeout_ms());
  if (r.has_segment_bytes()) out.segment_bytes = r.segment_bytes();
  if (r.has_compact_after_ms()) out.compact_after = milliseconds(r.compact_after_ms());
  // Kept as sent, as at creation: a value this broker does not know is refused naming the field.
  if (r.has_timestamp_type()) out.timestamp_type = static_cast<TimestampType>(std::clamp(static_cast<int>(r.timestamp_type()), 0, 255));
  return out;
}

void error_to_wire(const Status& status, v1::Error* out) {
  out->set_code(status.raw_code());
  out->set_name(std::string(status.name()));
  out->set_message(status.message());
  auto* fields = out->mutable_fields();
  for (const auto& [k, v] : status.fields()) (*fields)[k] = v;
}

void entry_to_wire(PartitionId partition, const EntryView& e, v1::Entry* out) {
  out->set_partition(partition.value);
  out->set_offset(e.offset.value);
  out->set_appended_at_us(e.appended_at.micros);
  auto* r = out->mutable_record();
  r->set_key(e.key.data(), e.key.size());
  r->set_payload(e.payload.data(), e.payload.size());
  for (const HeaderView& h : e.headers) {
    auto* wh = r->add_headers();
    wh->set_name(h.name.data(), h.name.size());
    wh->set_value(h.value.data(), h.value.size());
  }
}

void description_to_wire(const StreamDescription& d, v1::DescribeStreamResponse* out) {
  out->set_name(d.name);
  policy_to_wire(d.policy, out->mutable_policy());
  out->set_created_at_us(d.created_at.micros);
  for (const PartitionDescription& p : d.partitions) {
    auto* wp = out->add_partitions();
    wp->set_partition(p.partition.value);
    wp->set_first(p.bounds.first.value);
    wp->set_next(p.bounds.next.value);
    wp->set_bytes(p.bytes);
    wp->set_segments(p.segments);
    wp->set_in_rotation(p.in_rotation);
  }
}

}  // namespace streamd
