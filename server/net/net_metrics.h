// NetMetrics: the metrics the network layer updates, registered once so hot paths hold plain
// references (docs/SEMANTICS.md §10; the list is in docs/OPERATIONS.md §Monitoring). Operation-labelled
// series are indexed by the request's oneof case. Thread-safe like the metrics themselves.
#pragma once

#include <array>
#include <string_view>

#include "server/metrics/metrics.h"
#include "streamd.pb.h"

namespace streamd {

// The operation label of a request kind ("append", "read", …); "unknown" outside the oneof.
std::string_view operation_name(v1::Request::BodyCase kind);

class NetMetrics {
 public:
  explicit NetMetrics(MetricsRegistry& registry);

  // One past the highest Request body field number (alter_stream, 40); the unused numbers count as
  // "unknown".
  static constexpr size_t kOps = v1::Request::kAlterStream + 1;
  Counter& requests(v1::Request::BodyCase kind) { return *requests_[index(kind)]; }
  Histogram& latency(v1::Request::BodyCase kind) { return *latency_[index(kind)]; }
  // Registered on first use: the label set is open (op × error name).
  Counter& errors(v1::Request::BodyCase kind, std::string_view error_name);

  Counter& appended_records;
  Counter& appended_bytes;
  Counter& read_records;
  Counter& read_bytes;
  Gauge& connections;
  Counter& connections_accepted;
  Counter& connections_refused;
  Counter& connection_errors;
  Gauge& inflight_bytes;
  Gauge& waiting_reads;

 private:
  static size_t index(v1::Request::BodyCase kind) { return kind < kOps ? static_cast<size_t>(kind) : 0; }
  MetricsRegistry& registry_;
  std::array<Counter*, kOps> requests_{};
  std::array<Histogram*, kOps> latency_{};
};

}  // namespace streamd
