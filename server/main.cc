// streamd: the broker daemon. Configuration errors exit 78 naming the key; see server/daemon.h.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "server/config/config.h"
#include "server/daemon.h"

int main(int argc, char** argv) {
  // Large records (up to a 16 MiB frame) pass through buffers allocated per request. Past glibc's
  // default threshold each is a fresh mapping whose pages fault on first touch and are unmapped on
  // free; kept in the heap instead they are reused. Measured with 1 MiB records: 10-25% less CPU.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 128 << 20);
  // glibc gives each thread that allocates an arena of its own, up to eight per core, and each keeps
  // what was freed into it. The storage threads and the journal's thread free the batches the loop
  // allocated and allocate their own: a client flooding appends left the daemon 15-25 MiB larger with
  // the default than with two arenas (tests/load/unread_answers_test.cc). MALLOC_ARENA_MAX, when set,
  // still decides.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) ::mallopt(M_ARENA_MAX, 2);
  try {
    streamd::CommandLine command_line = streamd::parse_command_line(argc, argv);
    if (!command_line.options) {
      std::fputs(command_line.output.c_str(), command_line.exit_code == 0 ? stdout : stderr);
      return command_line.exit_code;
    }
    return streamd::run_daemon(*command_line.options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "streamd: start-up failed: %s\n", e.what());
    return 70;  // EX_SOFTWARE
  }
}
