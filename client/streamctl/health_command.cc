// `streamctl health`: the broker's status, version, uptime and stream count.
#include <CLI/CLI.hpp>

#include "client/duration.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"

namespace streamd::streamctl {

using client::Status;

namespace {

Status health_command(Context& ctx) {
  auto h = ctx.admin.health();
  if (!h.ok()) return h.error();
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("status", h->status)
                   .field("version", h->version)
                   .field("uptime_s", h->uptime_s)
                   .field("streams", h->streams)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "status:   " << h->status << '\n'
            << "version:  " << h->version << '\n'
            << "uptime:   " << client::format_duration(std::chrono::seconds(h->uptime_s)) << '\n'
            << "streams:  " << h->streams << '\n';
  }
  return Status();
}

}  // namespace

void add_health_command(CLI::App& app, ChosenCommand& chosen) {
  auto* cmd = app.add_subcommand("health", "broker status, version, uptime and stream count");
  cmd->footer("Example:\n  streamctl health --json");
  when_chosen(*cmd, chosen, health_command);
}

}  // namespace streamd::streamctl
