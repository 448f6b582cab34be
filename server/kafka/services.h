// Services: what every Kafka handler may use, owned by the KafkaServer and shared by its
// connections. Handlers run on the network loop; completions from storage or reader threads come
// back through `loop`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/storage/executor.h"
#include "server/storage/policy.h"

namespace streamd {
class Broker;
class Scheduler;
namespace auth {
class Authenticator;
}
}  // namespace streamd

namespace streamd::kafka {

class GroupCoordinator;
class KafkaMetrics;

// The address Metadata and FindCoordinator tell a connection's client to connect to: its own
// listener's, so a TLS client is sent to the TLS port.
struct Advertised {
  std::string host;
  int32_t port = 0;
};

struct KafkaOptions {
  int32_t node_id = 0;
  bool enforce_placement = false;
  bool auto_create_topics = true;  // Metadata creates a topic it is asked about (broker's auto_create_streams)
  uint64_t max_frame_bytes = 0;
  Policy default_policy;  // what CreateTopics and auto-create start from
  std::vector<std::string> sasl_mechanisms;  // offered by SaslHandshake; empty: no SASL APIs
  std::string log_dir;           // DescribeLogDirs' one directory (ListenerOptions::log_dir)
  bool log_dir_on_disk = false;  // its file system's total and free bytes are reported
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
  const auth::Authenticator& auth;  // the access file; loop thread only
};

}  // namespace streamd::kafka
