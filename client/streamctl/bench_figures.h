// The parts `streamctl bench`'s modes share (bench.cc, bench_produce.cc, bench_txn.cc): what a run measured, how it
// is printed, and the stream it runs on. Internal to streamctl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/error.h"
#include "client/streamctl/bench.h"

namespace streamd::streamctl {

struct Context;

struct Figures {
  std::string mode;
  uint64_t records = 0;
  uint64_t transactions = 0;  // txn: committed transactions (latencies are theirs)
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;
};

// Prints the figures (records/s, MB/s, latency percentiles), sorting the latencies first.
void print(Context& ctx, Figures& f);
// A name of its own for a run given no --stream.
std::string default_stream(const std::string& mode);
// Creates the stream unless it exists.
client::Status ensure_stream(Context& ctx, const std::string& name, int32_t partitions);

client::Status bench_produce(Context& ctx, const BenchArgs& args, Figures* figures);
client::Status bench_txn(Context& ctx, const BenchArgs& args, Figures* figures);

}  // namespace streamd::streamctl
