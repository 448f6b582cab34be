// Services: what every Kafka handler may use, owned by the KafkaServer and shared by its
// connections. Handlers run on the network loop; completions from storage or reader threads come
// back through `loop`.
#pragma once

#include <cstdint>
#include <string>

#include "server/storage/executor.h"
#include "server/storage/policy.h"

namespace streamd {
class Broker;
class Scheduler;
}  // namespace streamd

namespace streamd::kafka {

class GroupCoordinator;
class KafkaMetrics;

struct KafkaOptions {
  int32_t node_id = 0;
  std::string advertised_host;  // what Metadata and FindCoordinator tell clients to connect to
  int32_t advertised_port = 0;
  bool enforce_placement = false;
  bool auto_create_topics = true;  // Metadata creates a topic it is asked about (broker's auto_create_streams)
  uint64_t max_frame_bytes = 0;
  Policy default_policy;  // what CreateTopics and auto-create start from
};

struct Services {
  Broker& broker;
  Executor& blocking;  // broker calls that sync files (create, delete, trim)
  Executor& readers;   // broker calls that read logs (fetch, offset_at)
  Executor& loop;      // back onto the network loop
  Scheduler& timers;   // delayed calls on the loop (long-polls, group timers)
  GroupCoordinator& groups;
  KafkaMetrics& metrics;
  const KafkaOptions& options;
};

}  // namespace streamd::kafka
