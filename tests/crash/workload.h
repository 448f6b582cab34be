// Workload: the clients of one crash cycle, each on its own connection to the running daemon, driving
// it only through its protocol and recording every answer in the Ledger:
//  - producers: idempotent, keyed batches of 1 to 20 records, up to `window` appends pipelined per
//    connection (at most proto/producer_window.h's 5, as an idempotent producer may), to the live
//    streams (so that one partition's concurrent appends share syncs: group commit);
//  - consumers: one consumer group each, reading every partition of the live streams in turn and
//    committing after each read;
//  - one administrator: trims, stream deletes and creates, one at a time.
// They run until their connection breaks (the daemon is killed at the cut) or stop() is called. An
// error answered after the cut (`power_cut` set) is counted as no answer: the daemon was answering from
// a dead disk, and on a real machine nothing would have arrived.
//
// Thread-safety: construct, stop and read counters from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/crash/ledger.h"

namespace streamd::crash {

struct WorkloadOptions {
  int producers = 4;
  int window = 5;
  int consumers = 2;
  bool admin = true;
  std::vector<std::string> stream_names{"s0", "s1", "s2", "s3"};
  int min_live_streams = 2;
  uint64_t seed = 1;
};

struct WorkloadCounts {
  std::atomic<uint64_t> appends_sent{0}, appends_acknowledged{0}, appends_refused{0};
  std::atomic<uint64_t> records_acknowledged{0}, records_read{0};
  std::atomic<uint64_t> commits_sent{0}, commits_acknowledged{0};
  std::atomic<uint64_t> trims_sent{0}, trims_acknowledged{0};
  std::atomic<uint64_t> creates_sent{0}, creates_acknowledged{0};
  std::atomic<uint64_t> deletes_sent{0}, deletes_acknowledged{0};
};

// A policy for a new stream of the harness: 1 to 4 partitions, small segments so that they roll.
struct NewStream {
  int32_t partitions = 1;
  int64_t segment_bytes = 0;
};
NewStream random_stream(std::mt19937_64& rng);

class Workload {
 public:
  Workload(uint16_t port, Ledger& ledger, const std::atomic<bool>& power_cut, WorkloadOptions options,
           WorkloadCounts& counts);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  void stop();

 private:
  void produce(int index);
  void consume(int index);
  void administer();

  const uint16_t port_;
  Ledger& ledger_;
  const std::atomic<bool>& power_cut_;
  const WorkloadOptions options_;
  WorkloadCounts& counts_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace streamd::crash
