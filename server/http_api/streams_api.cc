// /api/v1/streams: list (paged, filtered), create, describe, delete; a partition's bounds, trim and
// compact (docs/HTTP.md §Streams).
#include <algorithm>

#include "server/http_api/api_context.h"
#include "server/http_api/record_json.h"

namespace streamd::http_api {
namespace {

constexpr uint64_t kMaxPageSize = 1000;

void write_rights(JsonWriter& w, const auth::Principal& principal, std::string_view stream) {
  w.key("rights")
      .begin_object()
      .field("read", principal.allows(auth::Right::kRead, stream))
      .field("write", principal.allows(auth::Right::kWrite, stream))
      .field("admin", principal.allows(auth::Right::kAdmin, stream))
      .end_object();
}

void write_description(JsonWriter& w, const StreamDescription& d) {
  w.field("name", d.name).field("created_at", format_time(d.created_at.micros));
  w.key("policy");
  write_policy(w, d.policy);
  uint64_t records = 0;
  uint64_t bytes = 0;
  w.key("partitions").begin_array();
  for (const PartitionDescription& p : d.partitions) {
    const uint64_t held = p.bounds.next - p.bounds.first;
    records += held;
    bytes += p.bytes;
    w.begin_object()
        .field("partition", p.partition.value)
        .field("first", p.bounds.first.value)
        .field("next", p.bounds.next.value)
        .field("records", held)
        .field("bytes", p.bytes)
        .field("segments", p.segments)
        .field("failed", p.failed)
        .end_object();
  }
  w.end_array();
  w.field("records", records).field("bytes", bytes);
}

// PARTITION of the route, checked to be a number; the broker refuses one outside the stream.
std::optional<PartitionId> route_partition(const Call& call, size_t index) {
  auto n = parse_u64("partition", call->params.at(index));
  if (!n.ok() || *n > static_cast<uint64_t>(INT32_MAX)) {
    call->error(bad_argument("partition", "partition must be a partition number"));
    return std::nullopt;
  }
  return PartitionId(static_cast<int32_t>(*n));
}

}  // namespace

void list_streams(ApiContext& ctx, const Call& call) {
  uint64_t offset = 0;
  uint64_t limit = 100;
  if (auto a = call->arg("offset")) {
    auto n = parse_u64("offset", *a);
    if (!n.ok()) return call->error(n.status());
    offset = *n;
  }
  if (auto a = call->arg("limit")) {
    auto n = parse_u64("limit", *a);
    if (!n.ok()) return call->error(n.status());
    if (*n == 0 || *n > kMaxPageSize) return call->error(bad_argument("limit", "limit must be 1 to 1000"));
    limit = *n;
  }
  const std::string filter(call->arg("filter").value_or(""));
  ctx.workers.post([&ctx, call, offset, limit, filter] {
    std::vector<StreamSummary> streams = ctx.broker.list_streams();
    std::erase_if(streams, [&](const StreamSummary& s) {
      // docs/SECURITY.md: a listing shows only the streams the principal may read.
      return !call->principal.allows(auth::Right::kRead, s.name) ||
             (!filter.empty() && s.name.find(filter) == std::string::npos);
    });
    std::sort(streams.begin(), streams.end(),
              [](const StreamSummary& a, const StreamSummary& b) { return a.name < b.name; });
    JsonWriter w;
    w.begin_object().field("total", streams.size()).field("offset", offset).field("limit", limit);
    w.key("streams").begin_array();
    for (size_t i = offset; i < streams.size() && i < offset + limit; ++i) {
      // Only the page is described: a list of 10,000 streams costs one page's worth of work.
      auto d = ctx.broker.describe_stream(streams[i].name);
      if (!d.ok()) continue;  // deleted since it was listed
      uint64_t records = 0;
      uint64_t bytes = 0;
      uint64_t next_sum = 0;
      for (const PartitionDescription& p : d->partitions) {
        records += p.bounds.next - p.bounds.first;
        bytes += p.bytes;
        next_sum += p.bounds.next.value;
      }
      w.begin_object()
          .field("name", d->name)
          .field("partitions", d->partitions.size())
          .field("records", records)
          .field("bytes", bytes)
          .field("appended", next_sum)
          .end_object();
    }
    w.end_array().end_object();
    call->json(w.take());
  });
}

void create_stream(ApiContext& ctx, const Call& call) {
  auto body = json_body(call);
  if (!body) return;
  const JsonValue* name = body->get("name");
  if (name == nullptr || !name->is_string()) return call->error(bad_argument("name", "the body needs a stream name"));
  if (!require(call, auth::Right::kAdmin, name->text(), "create_stream")) return;
  auto policy = decode_policy(body->get("policy"));
  if (!policy.ok()) return call->error(policy.status());
  const JsonValue* if_not_exists = body->get("if_not_exists");
  const bool tolerate = if_not_exists != nullptr && if_not_exists->type() == JsonValue::Type::kBool &&
                        if_not_exists->boolean();
  ctx.blocking.post([&ctx, call, stream = name->text(), policy = *policy, tolerate] {
    bool created = false;
    auto d = ctx.broker.create_stream(stream, policy, tolerate, &created);
    if (!d.ok()) return call->error(d.status());
    JsonWriter w;
    w.begin_object().field("created", created);
    write_description(w, *d);
    w.end_object();
    call->json(w.take(), created ? 201 : 200);
  });
}

void describe_stream(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require_any(call, stream, "describe_stream")) return;
  auto d = ctx.broker.describe_stream(stream);  // memory only: answered on the loop
  if (!d.ok()) return call->error(d.status());
  JsonWriter w;
  w.begin_object();
  write_description(w, *d);
  write_rights(w, call->principal, stream);
  w.end_object();
  call->json(w.take());
}

void delete_stream(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kAdmin, stream, "delete_stream")) return;
  ctx.blocking.post([&ctx, call, stream] {
    Status s = ctx.broker.delete_stream(stream);
    if (!s.ok()) return call->error(s);
    JsonWriter w;
    w.begin_object().field("name", stream).field("deleted", true).end_object();
    call->json(w.take());
  });
}

void partition_bounds(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kRead, stream, "bounds")) return;
  auto partition = route_partition(call, 1);
  if (!partition) return;
  auto b = ctx.broker.bounds(stream, *partition);
  if (!b.ok()) return call->error(b.status());
  JsonWriter w;
  w.begin_object()
      .field("partition", partition->value)
      .field("first", b->first.value)
      .field("next", b->next.value)
      .end_object();
  call->json(w.take());
}

void trim_partition(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kAdmin, stream, "trim")) return;
  auto partition = route_partition(call, 1);
  if (!partition) return;
  auto body = json_body(call);
  if (!body) return;
  auto offset = body->u64_of("before");
  if (!offset) return call->error(bad_argument("before", "the body needs {\"before\": OFFSET}"));
  ctx.blocking.post([&ctx, call, stream, partition = *partition, before = Offset(*offset)] {
    auto first = ctx.broker.trim(stream, partition, before);
    if (!first.ok()) return call->error(first.status());
    JsonWriter w;
    w.begin_object().field("partition", partition.value).field("first", first->value).end_object();
    call->json(w.take());
  });
}

void compact_partition(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kAdmin, stream, "compact")) return;
  auto partition = route_partition(call, 1);
  if (!partition) return;
  ctx.blocking.post([&ctx, call, stream, partition = *partition] {
    auto r = ctx.broker.compact(stream, partition);
    if (!r.ok()) return call->error(r.status());
    JsonWriter w;
    w.begin_object()
        .field("partition", partition.value)
        .field("scanned", r->scanned)
        .field("kept", r->kept)
        .field("dropped", r->dropped)
        .end_object();
    call->json(w.take());
  });
}

}  // namespace streamd::http_api
