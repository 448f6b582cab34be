// The command a command line chose, as the parsed subcommand leaves it for app.cc: what to run once
// the connection is made, and whether it is long-running. Each family of commands registers its
// subcommands and flags beside the code that runs them (commands.h) and names that code here, so that
// app.cc needs no list of subcommands to dispatch on. Not thread-safe: one parse at a time.
#pragma once

#include <functional>

#include "client/error.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace streamd::streamctl {

struct Context;

using Run = std::function<client::Status(Context&)>;

struct ChosenCommand {
  // Set by every parse that succeeds: the app requires exactly one subcommand.
  Run run;
  // A command that runs until its input ends or it is interrupted rides out a broker restart; a
  // one-shot command reports a refused connection at once.
  bool long_running = false;
};

// When the command line names `cmd`, makes `run` the chosen command once parsing has succeeded.
// `long_running` is asked then, with the flags parsed; without it the command is one-shot.
void when_chosen(CLI::App& cmd, ChosenCommand& chosen, Run run, std::function<bool()> long_running = {});

}  // namespace streamd::streamctl
