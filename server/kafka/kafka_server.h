// KafkaServer: the Kafka listener (docs/KAFKA.md). It accepts on kafka.listen, gives each connection
// a KafkaConnection over a TCP ByteStream, shares one GroupCoordinator and one set of Services among
// them, and on shutdown stops accepting and drains every connection.
//
// Threading: start() before the loop runs or on it; port(), shutdown() and destruction on the loop
// thread, or after the loop has stopped. Asio stays out of this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/config/config.h"
#include "server/storage/executor.h"
#include "server/storage/status.h"

namespace asio {
class io_context;
}

namespace streamd {

class Broker;
class MetricsRegistry;
class Scheduler;

namespace kafka {

struct ListenerOptions {
  Endpoint listen;
  std::string advertised_listener;  // HOST:PORT; empty: the listen address and the bound port
  int32_t node_id = 0;
  bool enforce_placement = false;
  bool auto_create_topics = true;
  Policy default_policy;
  Limits limits;
};

class KafkaServer {
 public:
  // `blocking` runs broker calls that sync files, `readers` those that read logs; `timers` must call
  // back on the loop (LoopScheduler).
  static Result<std::unique_ptr<KafkaServer>> start(asio::io_context& io, Broker& broker, Executor& blocking,
                                                    Executor& readers, Scheduler& timers, MetricsRegistry& metrics,
                                                    const ListenerOptions& options);
  ~KafkaServer();
  KafkaServer(const KafkaServer&) = delete;
  KafkaServer& operator=(const KafkaServer&) = delete;

  uint16_t port() const;
  // What Metadata tells clients to connect to.
  std::string advertised() const;
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
