// RecoveryLog: the lines a restarted daemon logged while it recovered (from "starting" to "ready"),
// sorted into what docs/OPERATIONS.md §"Reading the recovery log" lists, and checked against what the
// power cut really did to the disk (the filesystem's CutReport) and what was in flight:
//  - no line at error level or above: a power cut damages nothing that was synced, so nothing in
//    recovery may look like damage (a damaged first_offset, a stream that does not open) — except a
//    segment reported CORRUPT where the cut changed what it cut off: unsynced pages reach the disk in
//    any order, so a torn batch may be followed by later whole ones;
//  - a torn tail (of a segment or a GROUPS log) is reported only for a file the cut left with some of
//    its unsynced writes, and never after a cut that kept none (discard);
//  - a closed segment's index is reported rebuilt only when one of its files held unsynced writes at
//    the cut (a sealed segment's files are synced: it is found intact); the active segment's indexes
//    are stored through a mapping and never synced on their own, so the cut may take what the kernel
//    had not written back of them, unseen by the filesystem, and a rebuild of them needs no reason;
//  - bytes cut from an active segment past what its clean close left are reported only for a log the
//    cut left with some of its unsynced writes (an append after the clean open, which the cut stopped
//    before it was acknowledged and whose removal of the marker it undid);
//  - an interrupted create or delete is reported only for a stream whose create or delete was in
//    flight at the cut, or whose delete was acknowledged since the last cut (a delete removes the
//    files after its rename is synced and is answered even when the cut stops that);
//  - the ready line's stream and partition counts are those the verification found.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/powercut/powercut_model.h"

namespace streamd::crash {

struct RecoveryLines {
  std::vector<std::string> lines;
  uint64_t torn_segment_tails = 0;
  uint64_t torn_group_tails = 0;
  uint64_t reordered_tails = 0;  // "CORRUPT" segments, each checked to be the cut's doing
  uint64_t index_rebuilds = 0;
  uint64_t interrupted_creates = 0;
  uint64_t interrupted_deletes = 0;
  bool ready = false;
  int64_t ready_streams = -1;
  int64_t ready_partitions = -1;
};

// The lines of `log` (a daemon log, appended across restarts) from byte `from` on, up to the ready line.
RecoveryLines recovery_lines(const std::string& log, size_t from);

struct InFlight {
  std::set<std::string> creates;  // stream names whose create was in flight at the cut
  std::set<std::string> deletes;  // in flight, or acknowledged since the last verification
};

// Every line that does not match what happened; `mount` is the mount point the data directory is under.
std::vector<std::string> check_recovery(const RecoveryLines& lines, const powercut::CutReport& cut,
                                        powercut::CutMode mode, const InFlight& in_flight, const std::string& mount);

}  // namespace streamd::crash
