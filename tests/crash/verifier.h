// Verifier: after a restart, checks the broker against the Ledger through the protocol alone — list,
// describe, read every partition from its first offset to its next, list the groups — and records
// every failed check in the ledger. Then it makes what it found the ledger's truth for the next cycle.
//
// What it checks (docs/RELIABILITY.md §"What a cycle verifies"):
//  - every stream whose create was acknowledged exists, with its partitions and its creation instant;
//    every stream whose delete was acknowledged does not; one whose create or delete was in flight
//    exists whole or not at all, and no other stream exists;
//  - per partition: first is no lower than an acknowledged trim and is the previous first or a trim
//    point sent; the offsets from first to next are all there, without holes;
//  - every record known durable (acknowledged, read by a consumer, or found by an earlier verification)
//    is at its offset, byte for byte; every record found is one the harness sent to that stream
//    incarnation, with its key and headers, and none is from a refused append; every batch found is
//    whole, at consecutive offsets, in one partition (only a trim may have cut its front);
//  - every group's committed offset is its last acknowledged commit or a later one it sent (or, with
//    none acknowledged, the previous one), and no other group has committed.
//
// Runs with the workload stopped; holds the ledger's mutex throughout.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "tests/crash/ledger.h"

namespace streamd::testing {
class WireClient;
}

namespace streamd::crash {

struct VerifyCounts {
  uint64_t streams = 0;
  uint64_t partitions = 0;
  uint64_t records = 0;                 // read back and checked byte for byte
  uint64_t acknowledged_batches = 0;    // acknowledged since the last cut, found whole where acknowledged
  uint64_t acknowledged_records = 0;
  uint64_t unacknowledged_kept = 0;     // in flight at the cut and found whole
  uint64_t unacknowledged_lost = 0;     // in flight at the cut and not found
  uint64_t commits = 0;                 // (group, partition) pairs committed since the last cut, checked
  uint64_t trims = 0;                   // partitions trimmed since the last cut, checked
  uint64_t streams_decided = 0;         // creates and deletes acknowledged since the last cut, checked
  uint64_t streams_in_flight = 0;       // creates or deletes in flight at the cut, found done or undone
};

class Verifier {
 public:
  Verifier(Ledger& ledger, testing::WireClient& client) : ledger_(ledger), client_(client) {}
  VerifyCounts run();

 private:
  void check_stream(Incarnation& inc);
  void check_partition(Incarnation& inc, int32_t partition, uint64_t first, uint64_t next);
  void check_groups(Incarnation& inc);
  void fail(const Incarnation& inc, const std::string& what);

  Ledger& ledger_;
  testing::WireClient& client_;
  VerifyCounts counts_;
  std::map<uint64_t, std::string> found_batches_;  // batch → where it was found, across partitions
  std::map<uint64_t, std::pair<int32_t, uint64_t>> found_at_;  // batch → (partition, first offset)
};

}  // namespace streamd::crash
