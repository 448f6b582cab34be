// The daemon's descriptor budget. Every protocol connection, and every open segment and index file,
// is a descriptor; a process whose RLIMIT_NOFILE soft limit (1024 by default in many shells) is below
// what limits.max_connections admits fails accept() with EMFILE under load instead of refusing
// cleanly. At start-up the soft limit is raised to the hard limit, as a supervisor's LimitNOFILE
// would, and a limit still too small for max_connections is reported.
#pragma once

#include <cstdint>

namespace streamd {

struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit the process started with
  uint64_t now = 0;     // the soft limit after raising it
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit and logs what it did; warns when the result
// leaves less than `reserve` descriptors beyond `max_connections`.
OpenFileLimit raise_open_file_limit(uint32_t max_connections, uint64_t reserve = 1024);

// storage.max_open_files when set to auto: half of `open_file_limit` (the rest for connections and
// everything else), and no more than three quarters of vm.max_map_count, since every two partition
// files of three are mapped indexes. 64 at least.
uint64_t auto_max_open_files(uint64_t open_file_limit);

}  // namespace streamd
