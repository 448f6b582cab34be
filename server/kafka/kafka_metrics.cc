#include "server/kafka/kafka_metrics.h"

#include <string>

namespace streamd::kafka {

KafkaMetrics::KafkaMetrics(MetricsRegistry& registry)
    : produced_records(registry.counter("streamd_kafka_produced_records_total", "Records appended through Produce")),
      produced_bytes(registry.counter("streamd_kafka_produced_bytes_total",
                                      "Key, value and header bytes appended through Produce")),
      fetched_records(registry.counter("streamd_kafka_fetched_records_total", "Records answered to Fetch")),
      fetched_bytes(registry.counter("streamd_kafka_fetched_bytes_total", "Record batch bytes answered to Fetch")),
      connections(registry.gauge("streamd_kafka_connections", "Kafka connections open")),
      connections_accepted(
          registry.counter("streamd_kafka_connections_accepted_total", "Kafka connections accepted")),
      connections_refused(registry.counter("streamd_kafka_connections_refused_total",
                                           "Kafka connections closed at once for limits.max_connections")),
      protocol_errors(registry.counter("streamd_kafka_protocol_errors_total",
                                       "Kafka connections closed for a frame or request that breaks the protocol")),
      registry_(registry) {
  for (const ApiInfo& api : api_table()) {
    const Labels labels{{"api", std::string(api.name)}};
    requests_[index(api.key)] = &registry.counter("streamd_kafka_requests_total", "Kafka requests answered", labels);
    latency_[index(api.key)] = &registry.histogram("streamd_kafka_request_seconds",
                                                   "Kafka request latency, read to answer queued", latency_buckets(),
                                                   labels);
  }
}

void KafkaMetrics::error(ApiKey key, Error e) {
  if (e == Error::kNone) return;
  const ApiInfo* api = find_api(static_cast<int16_t>(key));
  registry_
      .counter("streamd_kafka_errors_total", "Kafka errors answered, per API and error",
               {{"api", api != nullptr ? std::string(api->name) : "unknown"}, {"error", std::string(error_name(e))}})
      .inc();
}

}  // namespace streamd::kafka
