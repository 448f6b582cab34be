// ApiContext: what the HTTP API's handlers share — the broker, where their work runs, the history,
// the scans in progress and the options — and the handlers themselves, one file per resource
// (streams_api.cc, records_api.cc, groups_api.cc, overview_api.cc, scan_api.cc).
//
// Threading: handlers are called on the network loop and must not block it. Anything that reads a
// log (records, lag in seconds, scans) runs on `workers`, the API's own pool; anything that syncs
// files (create, delete, trim, compact) on `blocking`; appends and commits are asynchronous in the
// broker. Answers go out through the call's Reply, from whichever thread finished the work.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/http_api/api_call.h"
#include "server/metrics/metrics.h"
#include "server/storage/executor.h"

namespace streamd::http_api {

class History;
class ScanJobs;
class Tails;

struct ApiOptions {
  bool export_enabled = true;       // console.export
  std::vector<std::string> allowed_hosts;  // console.allowed_hosts, beyond loopback names
  std::string engine = "file";      // what the overview says of where streams are kept
  uint64_t max_body_bytes = 4 << 20;
};

struct ApiContext {
  Broker& broker;
  Executor& workers;
  Executor& blocking;
  Scheduler& scheduler;
  MetricsRegistry& metrics;
  History& history;
  ScanJobs& scans;
  Tails& tails;
  const ApiOptions& options;
  std::chrono::steady_clock::time_point started;
  Counter& appended_records;  // shared with the native protocol's counters (docs/OPERATIONS.md)
  Counter& appended_bytes;
  Counter& read_records;
  Counter& read_bytes;
};

// True when the call's principal holds `right` on `stream`; otherwise answers PERMISSION_DENIED.
bool require(const Call& call, auth::Right right, std::string_view stream, std::string_view operation);
// Any right on `stream` (describing it).
bool require_any(const Call& call, std::string_view stream, std::string_view operation);
// The body as a JSON object, or answers PROTOCOL_ERROR / STREAM_MISCONFIGURED and returns nullopt.
std::optional<JsonValue> json_body(const Call& call);

// The handlers. params: the route's path parameters in order (stream, partition or group).
void list_streams(ApiContext& ctx, const Call& call);
void create_stream(ApiContext& ctx, const Call& call);
void describe_stream(ApiContext& ctx, const Call& call);
void delete_stream(ApiContext& ctx, const Call& call);
void partition_bounds(ApiContext& ctx, const Call& call);
void trim_partition(ApiContext& ctx, const Call& call);
void compact_partition(ApiContext& ctx, const Call& call);

void read_records(ApiContext& ctx, const Call& call);
void produce_records(ApiContext& ctx, const Call& call);
void offset_at_time(ApiContext& ctx, const Call& call);

void list_groups(ApiContext& ctx, const Call& call);
void commit_group(ApiContext& ctx, const Call& call);
void reset_group(ApiContext& ctx, const Call& call);

void health(ApiContext& ctx, const Call& call);
void overview(ApiContext& ctx, const Call& call);
void history(ApiContext& ctx, const Call& call);

void start_search(ApiContext& ctx, const Call& call);
void search_progress(ApiContext& ctx, const Call& call);
void cancel_search(ApiContext& ctx, const Call& call);
void export_records(ApiContext& ctx, const Call& call);

}  // namespace streamd::http_api
