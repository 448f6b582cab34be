// What the failover test checks of a stream's log against the attempts that wrote it
// (failover_load.h): docs/SCALING.md §"High availability"'s promise, record by record.
//
// - offsets consecutive from 0 in every partition;
// - no batch partial: each copy of a batch holds all its records, in order, at consecutive offsets of
//   one partition;
// - nothing acknowledged lost: every acknowledged attempt's batch is at the partition and offset its
//   answer gave;
// - nothing refused kept: a batch whose every attempt was refused outright is absent;
// - per key, batches in the order their producer sent them;
// - each batch once: the producers are idempotent, so a copy of a batch the broker already held must
//   have been answered with the original's offsets, never written again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/ha/failover_load.h"
#include "tests/integration/broker_group.h"

namespace streamd::testing {

struct LogCheck {
  uint64_t records = 0;     // records in the log
  size_t batches = 0;       // distinct batches in the log
  size_t acknowledged = 0;  // distinct batches acknowledged
  size_t duplicates = 0;    // copies beyond the first, over every batch (each one a problem)
  std::vector<std::string> problems;
};

// `attempts` were taken before `logs` were read. Unless `final`, producers may still be sending: a
// batch in the log whose attempt is not among `attempts` is then not a problem.
LogCheck check_failover_log(const PartitionLogs& logs, const std::vector<Attempt>& attempts, bool final);

}  // namespace streamd::testing
