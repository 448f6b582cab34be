// The soak's clients: each worker is a thread with its own connection(s) to the daemon, doing one kind
// of work at a bounded rate until stopped, checking every answer and counting what it did. Together
// they cover produce (keyed with tombstones, unkeyed), consume with group commits, long-polls, trims,
// retention by time and by size, compaction (scheduled and asked for), stream create/delete churn and
// connection churn.
//
// Streams: soak.keyed (4 partitions, compacted, retain_bytes), soak.timed (2 partitions, retain_for),
// soak.trimmed (1 partition, trimmed by a worker); soak.churn.N come and go.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace streamd::soak {

// Counts per operation, and errors: an answer missing, refused for no reason the worker expects, or
// wrong (a read going backwards, a record read back differing from the one appended).
class Tally {
 public:
  void count(const std::string& op, uint64_t n = 1);
  void error(const std::string& what);
  std::map<std::string, uint64_t> counts() const;
  uint64_t errors() const;
  std::vector<std::string> first_errors() const;  // the first few, for the report

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> counts_;
  uint64_t errors_ = 0;
  std::vector<std::string> first_errors_;
};

// The daemon's compaction period for the soak (soak_main.cc), and soak.keyed's retention by time.
inline constexpr std::chrono::seconds kCompactionPeriod{10};
inline constexpr std::chrono::seconds kKeyedRetainFor{30};
// How long the daemon's holdings take to stop growing under these workers: compaction empties
// soak.keyed's segments within a period, the husks it leaves live until kKeyedRetainFor, and a segment
// takes a few seconds to fill. Growth after this is what the soak looks for.
inline constexpr std::chrono::seconds kWarmUp = kKeyedRetainFor + kCompactionPeriod + std::chrono::seconds(5);

struct SoakOptions {
  uint16_t port = 0;
  // Appends per second per producer (3 producers); the other workers pace themselves from it.
  int rate = 200;
};

class Workers {
 public:
  Workers(SoakOptions options, Tally& tally);
  ~Workers();
  // Creates the streams; false (with the reason in the tally) when the daemon refuses.
  bool create_streams();
  void start();
  void stop();

 private:
  void produce_keyed();
  void produce_unkeyed(const std::string& stream, int partitions);
  void consume();
  void long_poll();
  void trim();
  void churn_streams();
  void churn_connections();

  const SoakOptions options_;
  Tally& tally_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace streamd::soak
