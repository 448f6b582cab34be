#include "client/streamctl/app.h"

#include <CLI/CLI.hpp>

#include "client/connection.h"
#include "client/streamctl/auth_command.h"
#include "client/streamctl/bench.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/global_flags.h"
#include "client/streamctl/output.h"

namespace streamd::streamctl {

using client::Error;
using client::Status;

namespace {

int report(const Error& error, bool json, std::ostream& err) {
  err << "streamctl: " << error.to_string() << '\n';
  if (json) err << error_json(error) << '\n';
  err.flush();
  return error.exit_code();
}

}  // namespace

int run_streamctl(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>& interrupted) {
  CLI::App app{"streamctl: administer a streamd broker and move records in and out of its streams",
               "streamctl"};
  app.require_subcommand(1);
  // Global flags are accepted after the command too: every subcommand falls through to them.
  app.fallthrough();
  GlobalFlags flags;
  add_global_flags(app, flags);
  app.footer(
      "Durations: 500ms, 10s, 5m, 2h, 7d, 1h30m. TLS: --tls, or any of --ca-file, --cert, --key and\n"
      "--server-name. Run 'streamctl COMMAND --help' for a command's flags.");
  // In the order the help lists them.
  ChosenCommand chosen;
  add_stream_commands(app, chosen);
  add_produce_command(app, chosen);
  add_consume_command(app, chosen);
  add_offset_commands(app, chosen);
  add_txn_commands(app, chosen);
  add_health_command(app, chosen);
  add_bench_command(app, chosen);
  add_auth_command(app, chosen);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : kUsageExitCode;
  }

  auto options = connection_options(flags, chosen.long_running, err);
  if (!options.ok()) return report(options.error(), flags.json, err);
  client::Connection connection(*options);
  Context ctx{connection, client::Admin(connection), flags.json, in, out, err, interrupted};
  const Status status = chosen.run(ctx);
  out.flush();
  if (!status.ok()) return report(status.error(), flags.json, err);
  return 0;
}

}  // namespace streamd::streamctl
