// KafkaServer: the Kafka listeners (docs/KAFKA.md). It accepts on kafka.listen and kafka.tls_listen,
// gives each connection a KafkaConnection over a TCP or TLS ByteStream that advertises its own
// listener's address, shares one GroupCoordinator and one set of Services among all of them, and on
// shutdown stops accepting and drains every connection.
//
// Threading: start() before the loop runs or on it; port(), shutdown() and destruction on the loop
// thread, or after the loop has stopped. Asio stays out of this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <vector>

#include "server/config/config.h"
#include "server/net/listen_spec.h"
#include "server/storage/executor.h"
#include "server/storage/status.h"

namespace asio {
class io_context;
}

namespace streamd {

class Broker;
class MetricsRegistry;
class Scheduler;
namespace auth {
class Authenticator;
}

namespace kafka {

struct KafkaListen {
  ListenSpec listen;
  std::string advertised_listener;  // HOST:PORT; empty: the listen address and the bound port
};

struct ListenerOptions {
  std::vector<KafkaListen> listeners;  // plain, TLS, or both
  std::vector<std::string> sasl_mechanisms;
  int32_t node_id = 0;
  bool enforce_placement = false;
  bool auto_create_topics = true;
  Policy default_policy;
  Limits limits;
  std::string log_dir;  // DescribeLogDirs' directory: the file engine's data_dir, or the engine's kind
  bool log_dir_on_disk = false;  // log_dir is a directory whose file system's sizes are reported
};

class KafkaServer {
 public:
  // `blocking` runs broker calls that sync files, `readers` those that read logs; `timers` must call
  // back on the loop (LoopScheduler). `auth`, used on the loop, must outlive the server.
  static Result<std::unique_ptr<KafkaServer>> start(asio::io_context& io, Broker& broker, Executor& blocking,
                                                    Executor& readers, Scheduler& timers, MetricsRegistry& metrics,
                                                    const ListenerOptions& options, const auth::Authenticator& auth);
  ~KafkaServer();
  KafkaServer(const KafkaServer&) = delete;
  KafkaServer& operator=(const KafkaServer&) = delete;

  // The port bound for listeners[i].
  uint16_t port(size_t i = 0) const;
  // What Metadata tells clients of listeners[i] to connect to.
  std::string advertised(size_t i = 0) const;
  // Stops accepting; requests already read are answered, waiting fetches answer at once; `done`
  // runs on the loop when every connection has closed, or after `timeout` with the rest closed.
  void shutdown(std::chrono::milliseconds timeout, std::function<void()> done);

 private:
  struct Impl;
  explicit KafkaServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kafka
}  // namespace streamd
