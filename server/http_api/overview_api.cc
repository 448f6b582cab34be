// /api/v1/health, /api/v1/overview and /api/v1/history: the broker at a glance and its last hour of
// rates and lag (docs/HTTP.md §Overview).
#include "server/http_api/api_context.h"
#include "server/http_api/history.h"
#include "server/http_api/tails.h"

namespace streamd::http_api {
namespace {

int64_t gauge_value(const MetricsRegistry& metrics, std::string_view name) {
  const Gauge* g = metrics.find_gauge(name);
  return g == nullptr ? 0 : g->value();
}

void write_health(JsonWriter& w, ApiContext& ctx) {
  w.field("status", "ok")
      .field("version", STREAMD_VERSION)
      .field("uptime_s", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started)
                             .count())
      .field("streams", ctx.broker.stream_count())
      .field("engine", ctx.options.engine);
}

void write_rates(JsonWriter& w, const std::vector<RateSample>& rates) {
  // Columns, not objects: an hour of samples stays a small answer.
  w.key("rates").begin_object();
  w.key("t").begin_array();
  for (const RateSample& s : rates) w.number(s.time_ms);
  w.end_array();
  w.key("append_records").begin_array();
  for (const RateSample& s : rates) w.real(s.append_records);
  w.end_array();
  w.key("append_bytes").begin_array();
  for (const RateSample& s : rates) w.real(s.append_bytes);
  w.end_array();
  w.key("read_records").begin_array();
  for (const RateSample& s : rates) w.real(s.read_records);
  w.end_array();
  w.key("read_bytes").begin_array();
  for (const RateSample& s : rates) w.real(s.read_bytes);
  w.end_array();
  w.end_object();
}

void write_lag(JsonWriter& w, const std::vector<LagSample>& lag) {
  w.key("lag").begin_object();
  w.key("t").begin_array();
  for (const LagSample& s : lag) w.number(s.time_ms);
  w.end_array();
  w.key("records").begin_array();
  for (const LagSample& s : lag) w.unsigned_number(s.lag);
  w.end_array();
  w.end_object();
}

Result<int64_t> since_arg(const Call& call) {
  if (auto a = call->arg("since")) return parse_i64("since", *a);
  return int64_t{0};
}

// The broker-wide figures are what /metrics shows, and want what it wants: read on every stream.
bool require_everywhere(const Call& call, std::string_view operation) {
  if (call->principal.holds_everywhere(auth::Right::kRead)) return true;
  call->denied(operation, "*", "read");
  return false;
}

}  // namespace

void health(ApiContext& ctx, const Call& call) {
  JsonWriter w;
  w.begin_object();
  write_health(w, ctx);
  w.end_object();
  call->json(w.take());
}

void overview(ApiContext& ctx, const Call& call) {
  if (!require_everywhere(call, "overview")) return;
  auto since = since_arg(call);
  if (!since.ok()) return call->error(since.status());
  ctx.workers.post([&ctx, call, since = *since] {
    size_t partitions = 0;
    size_t failed = 0;
    uint64_t bytes = 0;
    uint64_t records = 0;
    const auto streams = ctx.broker.list_streams();
    for (const StreamSummary& s : streams) {
      auto d = ctx.broker.describe_stream(s.name);
      if (!d.ok()) continue;  // deleted since it was listed
      for (const PartitionDescription& p : d->partitions) {
        ++partitions;
        failed += p.failed ? 1 : 0;
        bytes += p.bytes;
        records += p.bounds.next - p.bounds.first;
      }
    }
    JsonWriter w;
    w.begin_object();
    write_health(w, ctx);
    w.field("partitions", partitions)
        .field("failed_partitions", failed)
        .field("retained_bytes", bytes)
        .field("retained_records", records);
    w.key("connections")
        .begin_object()
        .field("native", gauge_value(ctx.metrics, "streamd_connections"))
        .field("kafka", gauge_value(ctx.metrics, "streamd_kafka_connections"))
        .field("http", gauge_value(ctx.metrics, "streamd_http_connections"))
        .end_object();
    w.field("live_tails", ctx.tails.waiting());
    w.field("interval_ms", static_cast<int64_t>(History::kRateInterval.count()));
    write_rates(w, ctx.history.rates(since));
    write_lag(w, ctx.history.total_lag(since));
    w.end_object();
    call->json(w.take());
  });
}

void history(ApiContext& ctx, const Call& call) {
  if (!require_everywhere(call, "history")) return;
  auto since = since_arg(call);
  if (!since.ok()) return call->error(since.status());
  JsonWriter w;
  w.begin_object().field("interval_ms", static_cast<int64_t>(History::kRateInterval.count()));
  write_rates(w, ctx.history.rates(*since));
  write_lag(w, ctx.history.total_lag(*since));
  w.end_object();
  call->json(w.take());
}

}  // namespace streamd::http_api
