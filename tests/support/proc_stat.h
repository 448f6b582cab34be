// What /proc/PID/stat says of a process that tests need: its parent (to signal a server and every
// process it forked) and when it started (with its pid, the name of one process that a reused pid
// cannot take: the HA cluster records it beside each pid, and its reaper signals only matches).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace streamd::testing {

struct ProcStat {
  pid_t parent = 0;        // field 4
  std::string start_time;  // field 22, clock ticks since boot
};

// nullopt when the process is gone.
std::optional<ProcStat> proc_stat(pid_t pid);

// Sends `signo` to `pid` and to every process whose parent it is: SIGSTOP hangs a server and what it
// forked (a PostgreSQL postmaster's backends, WAL sender, writer) with their connections open, as a
// stalled machine would. False when `pid` could not be signalled. Asserts nothing, so any thread may
// call it.
bool signal_with_children(pid_t pid, int signo);

}  // namespace streamd::testing
