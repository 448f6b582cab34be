// `streamctl bench`: load generators that print throughput and latency figures against a running
// broker. `bench produce` appends through P Producers (one connection each); `bench consume` reads a
// stream from its start to its end as a catch-up reader would; `bench e2e` appends at a fixed rate
// and measures, for each record, the time from the append call to its delivery by a long-polling
// reader; `bench txn` commits transactions over two streams from P transactional producers. Each
// prints records/s, MB/s and p50/p99/p99.9 latency (--json: one object; txn adds transactions/s, its
// latency being a whole transaction's). Every run is bounded by its record count or duration. Not
// thread-safe: one bench per process.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace streamd::streamctl {

struct ChosenCommand;

struct BenchArgs {
  std::string mode;  // produce, consume, e2e or txn
  std::string stream;
  uint64_t records = 100'000;
  size_t record_size = 100;
  size_t batch = 1000;
  int producers = 1;
  int32_t partitions = 1;
  bool keyed = false;
  int in_flight = 5;
  bool sync = false;             // closed loop: one append at a time per producer
  bool idempotent = true;        // producers stamp their batches (--no-idempotence: off)
  int32_t max_records = 5000;    // per partition per read (consume)
  bool read_uncommitted = false;  // consume at read_uncommitted rather than read_committed
  double rate = 2000;            // appends per second (e2e)
  double pace = 0;               // produce --sync: appends per second over all producers; 0: unpaced
  std::string duration = "10s";  // e2e
  uint64_t txn_records = 10;     // records per transaction (txn)
};

// Registers `bench` and its modes on `app`.
void add_bench_command(CLI::App& app, ChosenCommand& chosen);

}  // namespace streamd::streamctl
