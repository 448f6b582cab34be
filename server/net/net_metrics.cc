#include "server/net/net_metrics.h"

#include <string>

namespace streamd {

std::string_view operation_name(v1::Request::BodyCase kind) {
  switch (kind) {
    case v1::Request::kHello:
      return "hello";
    case v1::Request::kCreateStream:
      return "create_stream";
    case v1::Request::kDeleteStream:
      return "delete_stream";
    case v1::Request::kListStreams:
      return "list_streams";
    case v1::Request::kDescribeStream:
      return "describe_stream";
    case v1::Request::kAppend:
      return "append";
    case v1::Request::kRead:
      return "read";
    case v1::Request::kBounds:
      return "bounds";
    case v1::Request::kPeek:
      return "peek";
    case v1::Request::kCommit:
      return "commit";
    case v1::Request::kCommitted:
      return "committed";
    case v1::Request::kListGroups:
      return "list_groups";
    case v1::Request::kOffsetAt:
      return "offset_at";
    case v1::Request::kTrim:
      return "trim";
    case v1::Request::kCompact:
      return "compact";
    case v1::Request::kHealth:
      return "health";
    case v1::Request::kInitProducer:
      return "init_producer";
    case v1::Request::kTxnCommitOffsets:
      return "txn_commit_offsets";
    case v1::Request::kEndTxn:
      return "end_txn";
    case v1::Request::kListTransactions:
      return "list_transactions";
    case v1::Request::kDescribeTransaction:
      return "describe_transaction";
    case v1::Request::kAbortTransaction:
      return "abort_transaction";
    case v1::Request::kAlterStream:
      return "alter_stream";
    case v1::Request::BODY_NOT_SET:
      break;
  }
  return "unknown";
}

NetMetrics::NetMetrics(MetricsRegistry& registry)
    : appended_records(
          registry.counter("streamd_appended_records_total", "Records appended and acknowledged")),
      appended_bytes(registry.counter("streamd_appended_bytes_total",
                                      "Bytes of records (key, payload, headers) appended and acknowledged")),
      read_records(registry.counter("streamd_read_records_total", "Records returned by Read")),
      read_bytes(registry.counter("streamd_read_bytes_total", "Bytes of records returned by Read")),
      connections(registry.gauge("streamd_connections", "Protocol connections open")),
      connections_accepted(
          registry.counter("streamd_connections_accepted_total", "Protocol connections accepted")),
      connections_refused(registry.counter("streamd_connections_refused_total",
                                           "Connections refused with UNAVAILABLE at max_connections")),
      connection_errors(registry.counter("streamd_connection_errors_total",
                                         "Connections closed for a protocol error or a socket error")),
      inflight_bytes(registry.gauge("streamd_inflight_bytes",
                                    "Request bytes not yet answered plus answer bytes not yet written")),
      waiting_reads(registry.gauge("streamd_waiting_reads", "Long-poll reads waiting for records")),
      registry_(registry) {
  for (size_t i = 0; i < kOps; ++i) {
    const auto kind = static_cast<v1::Request::BodyCase>(i);
    const Labels labels{{"op", std::string(operation_name(kind))}};
    requests_[i] = &registry.counter("streamd_requests_total", "Requests received, by operation", labels);
    latency_[i] = &registry.histogram(
        "streamd_request_duration_seconds",
        "Time from a request's arrival to its answer being queued, by operation", latency_buckets(), labels);
  }
}

Counter& NetMetrics::errors(v1::Request::BodyCase kind, std::string_view error_name) {
  return registry_.counter("streamd_request_errors_total",
                           "Requests answered with an error, by operation and error",
                           {{"op", std::string(operation_name(kind))}, {"error", std::string(error_name)}});
}

}  // namespace streamd
