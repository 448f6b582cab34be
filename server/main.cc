// streamd: the broker daemon. Configuration errors exit 78 naming the key; see server/daemon.h.
#include <cstdio>
#include <exception>

#include "server/config/config.h"
#include "server/daemon.h"

int main(int argc, char** argv) {
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
