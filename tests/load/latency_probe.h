// LatencyProbe: what the load tests measure a broker by while something abuses it. One client on its
// own connection appends one record and reads it back, round after round, timing each answer; every
// answer is checked (the append acknowledged, the read returning that record). Percentiles come from
// every sample, not a histogram.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace streamd::testing {

struct Latencies {
  std::vector<double> ms;  // one per round, in milliseconds
  double percentile(double p) const;
};

struct ProbeResult {
  Latencies append;
  Latencies read;
  int failures = 0;  // answers missing, refused or wrong
  std::string first_failure;
};

class WireClient;

// `rounds` append-then-read rounds on `stream` (which must exist, one partition), on `client`'s
// connection (opened by the caller, so that it holds its place before a load takes the others).
ProbeResult probe(WireClient& client, const std::string& stream, int rounds);

// The bound the load tests hold a loaded p99 to: twice the worse of the idle p99s measured just
// before and just after the load, plus 0.25 ms for the scheduling noise of a shared 2-core machine:
// an idle broker's p99 there is a few tenths of a millisecond (reads under 0.1 ms), and one context
// switch more or less moves it by that much between two runs with no load at all.
double allowed_p99(double idle_before, double idle_after);

}  // namespace streamd::testing
