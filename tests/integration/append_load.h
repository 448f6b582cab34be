// AppendLoad: producers that keep appending to a running daemon, several appends in flight on each
// connection, until the daemon closes their connection or they reach their cap; then what the
// broker answered, per record, for durability checks after a restart. Every wait is bounded.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace streamd::testing {

struct Placement {
  int32_t partition = 0;
  uint64_t offset = 0;
  bool operator==(const Placement&) const = default;
};

struct LoadOutcome {
  std::map<std::string, Placement> acknowledged;  // payload → where the broker said it is
  std::map<std::string, std::string> refused;     // payload → error name
  std::set<std::string> unanswered;               // sent, no answer before the connection closed
  // Per connection, acknowledged placements in sending order (answers may arrive in any order).
  std::vector<std::vector<Placement>> acknowledged_in_order;
};

class AppendLoad {
 public:
  // Starts `connections` producers appending one record per batch to `stream`, `window` in flight
  // each, at most `max_per_connection` appends each.
  AppendLoad(uint16_t port, std::string stream, int connections, int window, int max_per_connection);
  ~AppendLoad();
  // Acknowledged appends so far, across producers.
  uint64_t acknowledged() const { return acknowledged_.load(); }
  // Waits for every producer to end (their connections closed or caps reached).
  LoadOutcome finish();

 private:
  void produce(int connection, LoadOutcome& out);

  const uint16_t port_;
  const std::string stream_;
  const int window_;
  const int max_per_connection_;
  std::atomic<uint64_t> acknowledged_{0};
  std::vector<LoadOutcome> outcomes_;
  std::vector<std::thread> threads_;
};

// Every record of every partition of `stream`, payload → placement (and the keys, to compare bytes).
std::map<std::string, Placement> read_everything(uint16_t port, const std::string& stream,
                                                 int32_t partitions);

// The payload of producer `connection`'s `seq`th record: unique, and long enough to be a real record.
std::string load_payload(int connection, int seq);

}  // namespace streamd::testing
