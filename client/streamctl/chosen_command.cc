#include "client/streamctl/chosen_command.h"

#include <CLI/CLI.hpp>
#include <utility>

namespace streamd::streamctl {

void when_chosen(CLI::App& cmd, ChosenCommand& chosen, Run run, std::function<bool()> long_running) {
  // CLI11 runs a subcommand's callback only after the whole line parsed and passed its requirements,
  // and never after --help: a rejected line leaves `chosen` untouched.
  cmd.callback([&chosen, run = std::move(run), long_running = std::move(long_running)] {
    chosen.run = run;
    chosen.long_running = long_running && long_running();
  });
}

}  // namespace streamd::streamctl
