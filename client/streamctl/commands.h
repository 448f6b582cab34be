// streamctl's commands (docs/SEMANTICS.md §8), one function each, over the client library. Each family
// registers its subcommands and their flags on the app beside the code that runs them, and the one
// the command line chose is left in a ChosenCommand (chosen_command.h) for app.cc to run once
// connected. A command prints its result to ctx.out (JSON with --json, text otherwise) and returns
// the error that ends it, which app.cc prints and turns into the exit code. Not thread-safe: one
// command runs at a time.
#pragma once

#include <atomic>
#include <istream>
#include <ostream>

#include "client/admin.h"
#include "client/connection.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace streamd::streamctl {

struct ChosenCommand;

struct Context {
  client::Connection& connection;
  client::Admin admin;
  bool json = false;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  // Set by SIGINT/SIGTERM: following commands stop cleanly.
  const std::atomic<bool>& interrupted;
};

// create, alter, delete, list and describe (stream_commands.cc).
void add_stream_commands(CLI::App& app, ChosenCommand& chosen);
// produce (produce_command.cc) and consume (consume_command.cc): records in and out.
void add_produce_command(CLI::App& app, ChosenCommand& chosen);
void add_consume_command(CLI::App& app, ChosenCommand& chosen);
// bounds, peek, commit, committed, groups, seek, trim and compact (offset_commands.cc).
void add_offset_commands(CLI::App& app, ChosenCommand& chosen);
// health (health_command.cc).
void add_health_command(CLI::App& app, ChosenCommand& chosen);
// txn list, describe and abort (txn_commands.cc).
void add_txn_commands(CLI::App& app, ChosenCommand& chosen);

}  // namespace streamd::streamctl
