// Several streamd brokers over one PostgreSQL database (docs/SCALING.md), and a keyed workload whose
// outcome can be checked record by record: producers spread over the brokers append keyed batches
// whose payloads name their producer, batch and place ("p3.b17.i2.n4"), consumers on other brokers
// long-poll and commit, and check_log() reads every partition back and checks what the brokers kept
// against what they acknowledged.
//
// Brokers listen on fixed loopback ports, so a broker killed and started again is found where it was.
// Clients reconnect by themselves (ReconnectingClient). Every wait is bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/wire_client.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {

// Brokers over `dsn`, each with `extra` args.
class BrokerGroup {
 public:
  BrokerGroup(const std::string& dsn, size_t count, const std::vector<std::string>& extra = {});
  size_t size() const { return brokers_.size(); }
  DaemonProcess& broker(size_t i) { return *brokers_[i]; }
  uint16_t port(size_t i) const { return ports_[i]; }
  const std::vector<uint16_t>& ports() const { return ports_; }

 private:
  std::vector<uint16_t> ports_;
  std::vector<std::unique_ptr<DaemonProcess>> brokers_;
};

// A WireClient to one port that connects again after its broker went away. Not thread-safe.
class ReconnectingClient {
 public:
  explicit ReconnectingClient(uint16_t port) : port_(port) {}
  // The answer, or an empty Response (no body) when the broker could not be reached or went away.
  v1::Response call(const v1::Request& request, std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  uint16_t port_;
  std::unique_ptr<WireClient> client_;
};

// What one producer's batch became.
struct SentBatch {
  int producer = 0;
  int seq = 0;
  int records = 0;
  std::string key;
  bool acked = false;
  int32_t partition = -1;
  uint64_t first = 0;
  std::chrono::steady_clock::time_point sent;
  std::string error;  // the error's name; "" when acked or when no answer came (outcome unknown)
};

// Producers spread over the brokers: producer i appends to broker i % ports.size(), one batch at a
// time, never resending a batch (an unanswered one's outcome is unknown, so it may or may not be kept).
class Producers {
 public:
  Producers(std::string stream, std::vector<uint16_t> ports, int producers);
  ~Producers();
  // Starts the threads; each sends `batches` batches, `pause` apart, or stops when told.
  void start(int batches, std::chrono::milliseconds pause = std::chrono::milliseconds(0));
  void stop();
  void join();
  std::vector<SentBatch> sent() const;

 private:
  void run(int producer, int batches, std::chrono::milliseconds pause);

  const std::string stream_;
  const std::vector<uint16_t> ports_;
  const int producers_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<SentBatch> sent_;
  std::vector<std::thread> threads_;
};

// One partition's records, in offset order.
struct LoggedEntry {
  uint64_t offset = 0;
  std::string key;
  std::string payload;
};
using PartitionLogs = std::map<int32_t, std::vector<LoggedEntry>>;

// Every record of every partition of `stream`, read through `port` from offset 0 until a read finds
// no more (at least to the end describe reports): every batch in it whole. Fails the test when a
// read fails.
PartitionLogs read_all(uint16_t port, const std::string& stream, int32_t partitions);

// The checks of docs/SCALING.md's promise, on `logs` against `sent`: per partition offsets consecutive
// from 0; every acknowledged batch present whole at its offsets; every batch present is whole (no
// partial batch), once; per key, batches in the order their producer sent them.
void check_log(const PartitionLogs& logs, const std::vector<SentBatch>& sent);

// A consumer on one broker that long-polls every partition from 0 and commits its cursors, as group
// `group`, through another broker. Runs until stop_at() is reached or its deadline passes.
class Consumer {
 public:
  Consumer(std::string stream, int32_t partitions, uint16_t read_port, uint16_t commit_port, std::string group);
  ~Consumer();
  void start();
  // Reads until every partition reached `ends`, then returns (bounded by `timeout`).
  void finish(const std::map<int32_t, uint64_t>& ends, std::chrono::milliseconds timeout);
  const PartitionLogs& logs() const { return logs_; }
  // The last commit acknowledged per partition.
  const std::map<int32_t, uint64_t>& committed() const { return committed_; }
  // What went wrong in the consumer's thread, for the test thread to report.
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  void run();

  const std::string stream_;
  const int32_t partitions_;
  const uint16_t read_port_;
  const uint16_t commit_port_;
  const std::string group_;
  std::mutex mu_;
  std::map<int32_t, uint64_t> ends_;
  bool have_ends_ = false;
  std::atomic<bool> give_up_{false};
  PartitionLogs logs_;
  std::map<int32_t, uint64_t> committed_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

// Until `port`'s broker describes `name` with `partitions` partitions (0: until it says
// STREAM_NOT_FOUND); the milliseconds that took, or -1 past `timeout`. Polls every 2 ms, fine enough
// for the cross-broker latencies the tests measure with it.
int64_t wait_for_stream(uint16_t port, const std::string& name, int partitions, std::chrono::milliseconds timeout);

}  // namespace streamd::testing
