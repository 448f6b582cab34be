// The power-cut harness (docs/RELIABILITY.md §"Power loss"): the real streamd on a PowerCutFs mount,
// cycle after cycle —
//   run the workload (workload.h) for a random time → cut the power (powercut_fs.h) and kill the
//   daemon (some cycles first start a clean shutdown, which the cut interrupts) → power back → restart the daemon on what the disk kept → check its recovery log
//   (recovery_log.h) and everything it holds (verifier.h) against the ledger (ledger.h); one cycle in
//   three then stops the daemon cleanly, starts it again and verifies once more.
// Every cycle's figures are printed as it ends, and the run's totals at the end.
//
// To drive another workload, or a daemon built another way (a shared journal, a new engine), change
// workload.cc or the daemon's arguments here: the ledger, the verification and the recovery-log checks
// only rely on the protocol's answers and the recovery log's documented lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "tests/crash/workload.h"
#include "tests/powercut/powercut_model.h"

namespace streamd::crash {

struct HarnessOptions {
  uint64_t cycles = 10;
  uint64_t seed = 1;
  std::optional<powercut::CutMode> mode;  // none: each cycle picks discard or torn
  std::chrono::milliseconds min_run{100};
  std::chrono::milliseconds max_run{1500};
  WorkloadOptions workload;
  std::vector<std::string> daemon_args;  // appended to the harness's own
  bool keep_going = false;  // run every cycle even after a failure
};

struct Totals {
  uint64_t cycles = 0;
  uint64_t clean_restarts = 0;  // cycles that ended with a clean stop and start, verified again
  uint64_t discard_cycles = 0;
  uint64_t torn_cycles = 0;
  // Sent and answered before the cuts.
  uint64_t appends_sent = 0, appends_acknowledged = 0, records_acknowledged = 0, appends_refused = 0;
  uint64_t records_read_by_consumers = 0;
  uint64_t commits_sent = 0, commits_acknowledged = 0;
  uint64_t trims_sent = 0, trims_acknowledged = 0;
  uint64_t creates_sent = 0, creates_acknowledged = 0, deletes_sent = 0, deletes_acknowledged = 0;
  // What the cuts did.
  uint64_t files_unsynced = 0, pages_unsynced = 0, pages_kept = 0, pages_torn = 0;
  uint64_t dir_changes_unsynced = 0, dir_changes_kept = 0;
  // What recovery said.
  uint64_t torn_segment_tails = 0, torn_group_tails = 0, reordered_tails = 0, index_rebuilds = 0;
  uint64_t interrupted_creates = 0, interrupted_deletes = 0;
  // What the verifications checked.
  uint64_t records_verified = 0, acknowledged_batches_verified = 0, acknowledged_records_verified = 0;
  uint64_t unacknowledged_kept = 0, unacknowledged_lost = 0;
  // Idempotent producers' unanswered batches sent again after the restart (resends.h).
  uint64_t resends_recognised = 0, resends_written = 0;
  uint64_t commits_verified = 0, trims_verified = 0, streams_decided = 0, streams_in_flight = 0;
  // The transactional producer's (txn_workload.h): ends answered, ends the cut left unanswered, and
  // transactions read whole at the last verification.
  uint64_t txns_committed = 0, txns_aborted = 0, txns_unanswered = 0, txns_refused = 0, txns_whole = 0;
  // How long the restarts took, against how much they had to recover.
  double slowest_start_s = 0;
  uint64_t slowest_start_cycle = 0, segments_at_slowest_start = 0, segments_at_end = 0;
  uint64_t failures = 0;
  double seconds = 0;
};

// Runs the cycles, printing to `out`. Returns the totals; failures > 0 when any check failed (the
// failures are printed as they are found).
Totals run_harness(const HarnessOptions& options, std::ostream& out);
void print_totals(const Totals& totals, std::ostream& out);

}  // namespace streamd::crash
