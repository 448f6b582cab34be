// What the load tests and bench/soak read of a running process from /proc: its resident memory and its
// open descriptors; and raising this process's own descriptor limit (inherited by a daemon it starts).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace streamd::testing {

// VmRSS of `pid`, in bytes; nullopt when the process is gone.
std::optional<uint64_t> resident_bytes(pid_t pid);
// Entries of /proc/PID/fd; nullopt when the process is gone.
std::optional<uint64_t> open_fds(pid_t pid);
// Raises RLIMIT_NOFILE (soft, and hard where permitted) to at least `wanted`. Returns the soft limit
// in force afterwards, which is below `wanted` when the hard limit could not be raised.
uint64_t raise_fd_limit(uint64_t wanted);

}  // namespace streamd::testing
