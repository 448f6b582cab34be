// `streamctl consume`: entries of one or more partitions, to the end of each (as it was when the
// command started) or, with --follow, until SIGINT/SIGTERM. With --group it starts at the group's
// committed offsets and commits after every batch it printed, so that an interrupted consume resumes
// after the last entry it showed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/consumer.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/interrupt_watch.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/output.h"
#include "client/streamctl/timestamp.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Result;
using client::StartPosition;
using client::Status;

Result<StartPosition> parse_start_position(std::string_view from, int64_t now) {
  if (from == "earliest") return StartPosition::earliest();
  if (from == "latest") return StartPosition::latest();
  if (!from.empty() && from.front() == '@') {
    auto at = parse_time_us(from.substr(1), now);
    if (!at.ok())
      return Error(ErrorCode::kStreamMisconfigured, at.error().message(),
                   {{"field", "from"}, {"value", std::string(from)}});
    return StartPosition::at_time(*at);
  }
  uint64_t offset = 0;
  auto [end, ec] = std::from_chars(from.data(), from.data() + from.size(), offset);
  if (ec != std::errc() || end != from.data() + from.size() || from.empty()) {
    return Error(ErrorCode::kStreamMisconfigured, "use earliest, latest, an offset, @RFC3339 or @-DURATION",
                 {{"field", "from"}, {"value", std::string(from)}});
  }
  return StartPosition::at_offset(offset);
}

namespace {

struct ConsumeArgs {
  std::string name;
  std::vector<int32_t> partitions;
  std::string from = "earliest";
  std::optional<uint64_t> max;
  bool follow = false;
  std::optional<std::string> group;
  std::string isolation = "read_committed";
};

Result<client::ConsumerOptions> consumer_options(Context& ctx, const ConsumeArgs& args) {
  auto start = parse_start_position(args.from, now_us());
  if (!start.ok()) return start.error();
  if (args.max && *args.max == 0) return Error(ErrorCode::kInvalidBatchSize, {{"field", "max"}, {"value", "0"}});
  client::ConsumerOptions options;
  options.partitions = args.partitions;
  options.start = *start;
  options.group = args.group.value_or("");
  options.max_records = 1000;
  if (args.max) options.max_records = static_cast<int32_t>(std::min<uint64_t>(*args.max, 1000));
  options.wait = std::chrono::milliseconds(args.follow ? 500 : 0);
  options.isolation =
      args.isolation == "read_uncommitted" ? client::Isolation::kReadUncommitted : client::Isolation::kReadCommitted;
  // A follower rides out a broker restart; a one-shot consume answers within --timeout.
  options.retry_for = args.follow ? ctx.connection.options().request_timeout : std::chrono::milliseconds(0);
  return options;
}

// Without --follow, where each partition ends: its next offset when the command started, or at
// read_committed its last stable offset (an open transaction's records wait for its commit). A
// partition already at its end is paused; a start past the end is left to the read, which refuses it
// (OFFSET_AHEAD).
Result<std::map<int32_t, uint64_t>> partition_ends(Context& ctx, const ConsumeArgs& args,
                                                   client::Consumer& consumer) {
  std::map<int32_t, uint64_t> end;
  for (int32_t p : consumer.partitions()) {
    auto bounds = ctx.admin.bounds(args.name, p);
    if (!bounds.ok()) return bounds.error();
    end[p] = args.isolation == "read_uncommitted" ? bounds->next : bounds->last_stable;
    if (consumer.position(p) == end[p]) consumer.pause(p);
  }
  return end;
}

// One poll's entries, printed up to --max and (without --follow) each partition's end. What is left
// unprinted is read again: each partition it appears in is sought back to its first unprinted entry.
void print_entries(Context& ctx, const ConsumeArgs& args, const std::vector<client::Entry>& entries,
                   const std::map<int32_t, uint64_t>& end, uint64_t& printed, client::Consumer& consumer) {
  std::map<int32_t, uint64_t> first_unprinted;
  std::string text;
  for (const client::Entry& e : entries) {
    const bool past_end = !args.follow && e.offset >= end.at(e.partition);
    if (past_end || (args.max && printed >= *args.max)) {
      first_unprinted.emplace(e.partition, e.offset);
      continue;
    }
    if (ctx.json) {
      JsonWriter w;
      write_entry(w, e);
      text += w.str();
    } else {
      text += e.record.payload;
    }
    text += '\n';
    ++printed;
  }
  ctx.out << text;
  ctx.out.flush();
  for (const auto& [p, offset] : first_unprinted) consumer.seek(p, offset);
}

// Without --follow, pauses each partition that reached its end; false when no cursor moved since
// `before`, as an answer with nothing in it and no cursor at its end would repeat forever.
bool pause_finished(client::Consumer& consumer, const std::map<int32_t, uint64_t>& before,
                    const std::map<int32_t, uint64_t>& end) {
  bool moved = false;
  for (int32_t p : consumer.partitions()) {
    moved = moved || consumer.position(p) != before.at(p);
    if (!consumer.is_paused(p) && consumer.position(p) >= end.at(p)) {
      consumer.pause(p);
      moved = true;
    }
  }
  return moved;
}

Status consume_command(Context& ctx, const ConsumeArgs& args) {
  auto options = consumer_options(ctx, args);
  if (!options.ok()) return options.error();
  auto opened = client::Consumer::open(ctx.connection, args.name, *options);
  if (!opened.ok()) return opened.error();
  client::Consumer& consumer = **opened;
  // After a signal the poll under way ends as it would (a live broker answers within `wait`, and
  // what it printed is committed), but a broker that is gone is not waited for.
  InterruptWatch interrupt_watch(ctx.interrupted, std::chrono::milliseconds(0),
                                 [&] { ctx.connection.stop_reconnecting(); });

  std::map<int32_t, uint64_t> end;
  if (!args.follow) {
    auto ends = partition_ends(ctx, args, consumer);
    if (!ends.ok()) return ends.error();
    end = std::move(*ends);
  }
  auto all_done = [&] {
    return std::all_of(consumer.partitions().begin(), consumer.partitions().end(),
                       [&](int32_t p) { return consumer.is_paused(p); });
  };

  uint64_t printed = 0;
  while (!ctx.interrupted && !(args.max && printed >= *args.max) && (args.follow || !all_done())) {
    std::map<int32_t, uint64_t> before;
    for (int32_t p : consumer.partitions()) before[p] = consumer.position(p);
    auto entries = consumer.poll();
    if (!entries.ok()) {
      // A follower waits out a broker restart for as long as it is left running.
      if (args.follow && entries.error().is(ErrorCode::kUnavailable)) continue;
      if (ctx.interrupted) break;
      return entries.error();
    }
    print_entries(ctx, args, *entries, end, printed, consumer);
    if (!args.follow && !pause_finished(consumer, before, end)) break;
    if (args.group) {
      if (Status s = consumer.commit(); !s.ok()) return s;
    }
  }
  if (args.group) return consumer.commit();
  return Status();
}

}  // namespace

void add_consume_command(CLI::App& app, ChosenCommand& chosen) {
  // --max and --group are told apart from 0 and an empty one by whether they were given.
  struct Flags {
    ConsumeArgs args;
    uint64_t max = 0;
    std::string group;
  };
  auto flags = std::make_shared<Flags>();
  ConsumeArgs& args = flags->args;
  auto* cmd = app.add_subcommand("consume", "print entries, to the end or following new ones");
  cmd->add_option("name", args.name, "stream name")->required();
  cmd->add_option("--partition", args.partitions, "partitions to read (default: all, interleaved)");
  cmd->add_option("--from", args.from, "earliest | latest | OFFSET | @RFC3339 | @-DURATION")
      ->capture_default_str();
  const CLI::Option* max = cmd->add_option("--max", flags->max, "stop after this many entries");
  cmd->add_flag("--follow", args.follow, "wait for new entries until SIGINT/SIGTERM");
  cmd->add_option("--isolation", args.isolation,
                  "read_committed: up to the last stable offset, no aborted record; read_uncommitted: to the end")
      ->check(CLI::IsMember({"read_committed", "read_uncommitted"}))
      ->capture_default_str();
  const CLI::Option* group =
      cmd->add_option("--group", flags->group, "start at and commit this group's offsets");
  cmd->footer("Example:\n  streamctl consume events --group audit --follow --json");
  when_chosen(
      *cmd, chosen,
      [flags, max, group](Context& ctx) {
        if (max->count() > 0) flags->args.max = flags->max;
        if (group->count() > 0) flags->args.group = flags->group;
        return consume_command(ctx, flags->args);
      },
      // A follower goes on until it is interrupted, riding out a broker restart on the way.
      [flags] { return flags->args.follow; });
}

}  // namespace streamd::streamctl
