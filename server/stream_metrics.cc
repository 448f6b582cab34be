#include "server/stream_metrics.h"

#include <map>
#include <string>

namespace streamd {
namespace {

void write_partition(MetricsWriter& w, const std::string& stream, const PartitionDescription& p) {
  const Labels labels{{"stream", stream}, {"partition", std::to_string(p.partition.value)}};
  w.gauge("streamd_partition_next_offset", "Offset the partition's next record takes", labels,
          static_cast<double>(p.bounds.next.value));
  w.gauge("streamd_partition_first_offset", "Lowest offset the partition still retains", labels,
          static_cast<double>(p.bounds.first.value));
  w.gauge("streamd_partition_retained_bytes", "Bytes of log the partition retains", labels,
          static_cast<double>(p.bytes));
  w.gauge("streamd_partition_segments", "Segment files of the partition", labels, static_cast<double>(p.segments));
}

// Every fenced partition is named whatever metrics.per_partition says: one series per failure, not
// one per partition. With per-partition series on, healthy partitions show 0.
void write_partition_failed(MetricsWriter& w, const std::string& stream, const PartitionDescription& p) {
  w.gauge("streamd_partition_failed", "1 when a write or sync of the partition failed: it refuses appends until a restart",
          {{"stream", stream}, {"partition", std::to_string(p.partition.value)}}, p.failed ? 1.0 : 0.0);
}

void write_stream(MetricsWriter& w, const StreamDescription& d) {
  double next_sum = 0;
  double retained_records = 0;
  double retained_bytes = 0;
  double segments = 0;
  double unstable = 0;
  for (const PartitionDescription& p : d.partitions) {
    unstable += static_cast<double>(p.bounds.next.value - p.last_stable.value);
    next_sum += static_cast<double>(p.bounds.next.value);
    retained_records += static_cast<double>(p.bounds.next.value - p.bounds.first.value);
    retained_bytes += static_cast<double>(p.bytes);
    segments += static_cast<double>(p.segments);
  }
  const Labels labels{{"stream", d.name}};
  w.gauge("streamd_stream_partitions", "Partitions of the stream", labels, static_cast<double>(d.partitions.size()));
  w.gauge("streamd_stream_next_offset_sum", "Sum of the next offsets of the stream's partitions: records ever appended",
          labels, next_sum);
  w.gauge("streamd_stream_retained_records", "Records the stream's partitions retain", labels, retained_records);
  w.gauge("streamd_stream_retained_bytes", "Bytes of log the stream's partitions retain", labels, retained_bytes);
  w.gauge("streamd_stream_segments", "Segment files of the stream's partitions", labels, segments);
  w.gauge("streamd_stream_unstable_records",
          "Offsets of the stream's partitions past their last stable offset: what read_committed readers wait for "
          "while transactions are open",
          labels, unstable);
}

// The coordinator's transactions: how many are open, how long the oldest has been, how they ended.
void write_transactions(MetricsWriter& w, const TxnCoordinator& txns) {
  const TxnOpenSummary open = txns.open_summary();
  w.gauge("streamd_transactions_open", "Transactions open or being ended", {}, static_cast<double>(open.open));
  w.gauge("streamd_transaction_oldest_open_seconds", "How long the oldest open transaction has been open (0: none)",
          {}, std::chrono::duration<double>(open.oldest).count());
  const TxnCounts& counts = txns.counts();
  const char* help = "Transactions ended, by outcome: commit, abort (by its producer), timeout, operator";
  w.counter("streamd_transactions_total", help, {{"outcome", "commit"}}, static_cast<double>(counts.commits.load()));
  w.counter("streamd_transactions_total", help, {{"outcome", "abort"}}, static_cast<double>(counts.aborts.load()));
  w.counter("streamd_transactions_total", help, {{"outcome", "timeout"}}, static_cast<double>(counts.timeouts.load()));
  w.counter("streamd_transactions_total", help, {{"outcome", "operator"}},
            static_cast<double>(counts.operator_aborts.load()));
  w.gauge("streamd_transactional_ids", "Transactional ids the coordinator holds", {}, static_cast<double>(txns.ids()));
  w.gauge("streamd_transactional_ids_max", "limits.max_transactional_ids", {},
          static_cast<double>(txns.limits().max_ids));
  w.counter("streamd_transactional_id_expirations_total",
            "Transactional ids forgotten after limits.transactional_id_expiry with no transaction open", {},
            static_cast<double>(counts.expired_ids.load()));
}

void write_group_lag(MetricsWriter& w, const Broker& broker, const std::string& stream) {
  auto groups = broker.list_groups(stream);
  if (!groups.ok()) return;  // deleted since it was listed
  std::map<std::string, double> lag;
  for (const GroupOffset& g : *groups) lag[g.group] += static_cast<double>(g.lag);
  for (const auto& [group, records] : lag) {
    w.gauge("streamd_group_lag", "Records of the stream after the group's committed offsets, over all partitions",
            {{"stream", stream}, {"group", group}}, records);
  }
}

}  // namespace

void register_stream_metrics(MetricsRegistry& registry, Broker& broker, bool per_partition) {
  registry.add_collector([&broker, per_partition](MetricsWriter& w) {
    w.gauge("streamd_streams", "Streams open", {}, static_cast<double>(broker.stream_count()));
    uint64_t failed = 0;
    for (const StreamSummary& s : broker.list_streams()) {
      auto d = broker.describe_stream(s.name);
      if (!d.ok()) continue;  // deleted since it was listed
      write_stream(w, *d);
      for (const PartitionDescription& p : d->partitions) {
        failed += p.failed ? 1 : 0;
        if (per_partition) write_partition(w, s.name, p);
        if (per_partition || p.failed) write_partition_failed(w, s.name, p);
      }
      write_group_lag(w, broker, s.name);
    }
    w.gauge("streamd_partitions_failed", "Partitions refusing appends after a failed write or sync", {},
            static_cast<double>(failed));
    const ProducerLimits& producers = broker.producers();
    w.gauge("streamd_producers", "Idempotent producers' states held, over all partitions", {},
            static_cast<double>(producers.count.load()));
    w.gauge("streamd_producers_max", "limits.max_producers", {}, static_cast<double>(producers.max_producers));
    w.counter("streamd_producer_evictions_total",
              "Producer states a partition gave up past limits.max_producers, least recently used first", {},
              static_cast<double>(producers.evictions.load()));
    w.counter("streamd_producer_expirations_total", "Producer states dropped after limits.producer_idle_expiry idle",
              {}, static_cast<double>(producers.expirations.load()));
    if (const TxnCoordinator* txns = broker.transactions()) write_transactions(w, *txns);
  });
}

}  // namespace streamd
