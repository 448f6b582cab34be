// What /metrics says about the streams themselves, gathered from the broker at scrape time.
//
// By default one series per stream — its partition count, retained records and bytes, segment files
// and the sum of its partitions' next offsets (whose rate is the stream's append rate) — and per
// consumer group its total lag, the gauge operators alert on. Per-partition series (bounds, bytes,
// segments) are opt-in (metrics.per_partition, docs/CONFIG.md): on a broker of 100,000 partitions
// they are 400,000 samples per scrape, more than most Prometheus setups want from one target.
#pragma once

#include "server/broker/broker.h"
#include "server/metrics/metrics.h"

namespace streamd {

void register_stream_metrics(MetricsRegistry& registry, Broker& broker, bool per_partition);

}  // namespace streamd
