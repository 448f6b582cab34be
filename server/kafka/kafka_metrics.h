// KafkaMetrics: what the Kafka listener reports on /metrics (docs/OPERATIONS.md §Monitoring):
// requests, latency and errors per Kafka API, records and bytes produced and fetched, connections.
// Registered once, so hot paths hold plain references; thread-safe like the metrics themselves.
#pragma once

#include <array>
#include <cstdint>

#include "server/kafka/api_table.h"
#include "server/kafka/errors.h"
#include "server/metrics/metrics.h"

namespace streamd::kafka {

class KafkaMetrics {
 public:
  explicit KafkaMetrics(MetricsRegistry& registry);

  Counter& requests(ApiKey key) { return *requests_[index(key)]; }
  Histogram& latency(ApiKey key) { return *latency_[index(key)]; }
  // Registered on first use: the label set is api × error name.
  void error(ApiKey key, Error e);

  Counter& produced_records;
  Counter& produced_bytes;
  Counter& fetched_records;
  Counter& fetched_bytes;
  Gauge& connections;
  Counter& connections_accepted;
  Counter& connections_refused;
  Counter& protocol_errors;

 private:
  static constexpr size_t kSlots = 64;
  static size_t index(ApiKey key) { return static_cast<size_t>(key) % kSlots; }
  MetricsRegistry& registry_;
  std::array<Counter*, kSlots> requests_{};
  std::array<Histogram*, kSlots> latency_{};
};

}  // namespace streamd::kafka
