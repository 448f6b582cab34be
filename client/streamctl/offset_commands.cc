// The offset commands: bounds, peek, commit, committed, groups, seek, trim and compact — where a
// partition's entries start and end, what a group has read, and cutting a partition down — each
// registered with its flags beside the code that runs it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/output.h"
#include "client/streamctl/timestamp.h"

namespace streamd::streamctl {

using client::Error;
using client::Result;
using client::Status;

namespace {

// A --partition that may be left out, meaning every partition.
struct OptionalPartition {
  int32_t value = 0;
  const CLI::Option* flag = nullptr;

  std::optional<int32_t> given() const { return flag->count() > 0 ? std::optional(value) : std::nullopt; }
};

struct StreamPartitions {
  std::string name;
  OptionalPartition partition;
};

struct StreamPartition {
  std::string name;
  int32_t partition = 0;
};

// The partitions of `name`, 0..count-1, from DescribeStream.
Result<std::vector<int32_t>> all_partitions(Context& ctx, const std::string& name) {
  auto description = ctx.admin.describe_stream(name);
  if (!description.ok()) return description.error();
  std::vector<int32_t> partitions;
  for (const auto& p : description->partitions) partitions.push_back(p.partition);
  if (partitions.empty()) {
    for (int32_t p = 0; p < std::max(description->policy.partitions, 1); ++p) partitions.push_back(p);
  }
  return partitions;
}

// The partition a command was given, or every partition of `name` when it was given none.
Result<std::vector<int32_t>> chosen_partitions(Context& ctx, const std::string& name,
                                               std::optional<int32_t> partition) {
  if (partition) return std::vector<int32_t>{*partition};
  return all_partitions(ctx, name);
}

Status bounds_command(Context& ctx, const std::string& name, std::optional<int32_t> partition) {
  auto partitions = chosen_partitions(ctx, name, partition);
  if (!partitions.ok()) return partitions.error();
  std::vector<client::Bounds> bounds;
  for (int32_t p : *partitions) {
    auto b = ctx.admin.bounds(name, p);
    if (!b.ok()) return b.error();
    bounds.push_back(*b);
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& b : bounds) {
      w.begin_object()
          .field("partition", b.partition)
          .field("first", b.first)
          .field("next", b.next)
          .field("last_stable", b.last_stable)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "FIRST", "NEXT", "STABLE"}, {true, true, true, true});
  for (const auto& b : bounds) {
    table.add({std::to_string(b.partition), std::to_string(b.first), std::to_string(b.next),
               std::to_string(b.last_stable)});
  }
  table.print(ctx.out);
  return Status();
}

void add_bounds_command(CLI::App& app, ChosenCommand& chosen) {
  auto flags = std::make_shared<StreamPartitions>();
  auto* cmd = app.add_subcommand("bounds", "first, next and last stable offsets of partitions");
  cmd->add_option("name", flags->name, "stream name")->required();
  flags->partition.flag =
      cmd->add_option("--partition", flags->partition.value, "one partition (default: all)");
  cmd->footer("Example:\n  streamctl bounds orders --partition 0");
  when_chosen(*cmd, chosen,
              [flags](Context& ctx) { return bounds_command(ctx, flags->name, flags->partition.given()); });
}

Status peek_command(Context& ctx, const std::string& name, int32_t partition) {
  auto entry = ctx.admin.peek(name, partition);
  if (!entry.ok()) return entry.error();
  if (ctx.json) {
    JsonWriter w;
    if (*entry) {
      write_entry(w, **entry);
    } else {
      w.null();
    }
    ctx.out << w.str() << '\n';
  } else if (*entry) {
    const client::Entry& e = **entry;
    ctx.out << "partition " << e.partition << " offset " << e.offset << " at "
            << format_rfc3339_us(e.appended_at_us) << '\n'
            << "key:     " << e.record.key << '\n'
            << "payload: " << e.record.payload << '\n';
  } else {
    ctx.out << "partition " << partition << " is empty\n";
  }
  return Status();
}

void add_peek_command(CLI::App& app, ChosenCommand& chosen) {
  auto flags = std::make_shared<StreamPartition>();
  auto* cmd = app.add_subcommand("peek", "the last entry of a partition");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--partition", flags->partition, "partition")->required();
  cmd->footer("Example:\n  streamctl peek orders --partition 0 --json");
  when_chosen(*cmd, chosen,
              [flags](Context& ctx) { return peek_command(ctx, flags->name, flags->partition); });
}

Status commit_command(Context& ctx, const std::string& name, const std::string& group, int32_t partition,
                      uint64_t offset) {
  if (Status s = ctx.admin.commit(name, group, partition, offset); !s.ok()) return s;
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("group", group)
                   .field("partition", partition)
                   .field("offset", offset)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "group " << group << " partition " << partition << " committed at " << offset << '\n';
  }
  return Status();
}

void add_commit_command(CLI::App& app, ChosenCommand& chosen) {
  struct Flags : StreamPartition {
    std::string group;
    uint64_t offset = 0;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("commit", "set a group's next offset on a partition");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--group", flags->group, "consumer group")->required();
  cmd->add_option("--partition", flags->partition, "partition")->required();
  cmd->add_option("--offset", flags->offset, "the offset the group reads next")->required();
  cmd->footer("Example:\n  streamctl commit orders --group billing --partition 0 --offset 120");
  when_chosen(*cmd, chosen, [flags](Context& ctx) {
    return commit_command(ctx, flags->name, flags->group, flags->partition, flags->offset);
  });
}

Status committed_command(Context& ctx, const std::string& name, const std::string& group,
                         std::optional<int32_t> partition) {
  std::vector<std::pair<int32_t, uint64_t>> rows;
  if (partition) {
    auto offset = ctx.admin.committed(name, group, *partition);
    if (!offset.ok()) return offset.error();
    rows.emplace_back(*partition, *offset);
  } else {
    auto all = all_partitions(ctx, name);
    if (!all.ok()) return all.error();
    for (int32_t p : *all) {
      auto offset = ctx.admin.committed(name, group, p);
      if (offset.ok()) {
        rows.emplace_back(p, *offset);
      } else if (!offset.error().is(client::ErrorCode::kUnknownGroup)) {
        return offset.error();
      }
    }
    // A group that committed nowhere is unknown, as it is for one partition.
    if (rows.empty()) return Error(client::ErrorCode::kUnknownGroup, {{"group", group}, {"stream", name}});
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& [p, o] : rows) w.begin_object().field("partition", p).field("offset", o).end_object();
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "OFFSET"}, {true, true});
  for (const auto& [p, o] : rows) table.add({std::to_string(p), std::to_string(o)});
  table.print(ctx.out);
  return Status();
}

void add_committed_command(CLI::App& app, ChosenCommand& chosen) {
  struct Flags : StreamPartitions {
    std::string group;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("committed", "a group's committed offsets");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--group", flags->group, "consumer group")->required();
  flags->partition.flag =
      cmd->add_option("--partition", flags->partition.value, "one partition (default: all)");
  cmd->footer("Example:\n  streamctl committed orders --group billing");
  when_chosen(*cmd, chosen, [flags](Context& ctx) {
    return committed_command(ctx, flags->name, flags->group, flags->partition.given());
  });
}

Status groups_command(Context& ctx, const std::string& name) {
  auto groups = ctx.admin.list_groups(name);
  if (!groups.ok()) return groups.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& g : *groups) {
      w.begin_object()
          .field("group", g.group)
          .field("partition", g.partition)
          .field("committed", g.committed)
          .field("next", g.next)
          .field("lag", g.lag)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"GROUP", "PARTITION", "COMMITTED", "NEXT", "LAG"}, {false, true, true, true, true});
  for (const auto& g : *groups) {
    table.add({g.group, std::to_string(g.partition), std::to_string(g.committed), std::to_string(g.next),
               std::to_string(g.lag)});
  }
  table.print(ctx.out);
  return Status();
}

void add_groups_command(CLI::App& app, ChosenCommand& chosen) {
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("groups", "every group's committed offset and lag per partition");
  cmd->add_option("name", *name, "stream name")->required();
  cmd->footer("Example:\n  streamctl groups orders");
  when_chosen(*cmd, chosen, [name](Context& ctx) { return groups_command(ctx, *name); });
}

Status seek_command(Context& ctx, const std::string& name, int32_t partition, const std::string& time) {
  std::string_view text = time;
  if (!text.empty() && text.front() == '@') text.remove_prefix(1);
  auto at = parse_time_us(text, now_us());
  if (!at.ok()) return at.error();
  auto offset = ctx.admin.offset_at(name, partition, *at);
  if (!offset.ok()) return offset.error();
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("partition", partition)
                   .field("offset", *offset)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "partition " << partition << " offset " << *offset << '\n';
  }
  return Status();
}

void add_seek_command(CLI::App& app, ChosenCommand& chosen) {
  struct Flags : StreamPartition {
    std::string time;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("seek", "the first offset appended at or after a time");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--partition", flags->partition, "partition")->required();
  cmd->add_option("--time", flags->time, "RFC 3339 time, or -DURATION before now")->required();
  cmd->footer(
      "Example:\n  streamctl seek orders --partition 0 --time 2026-01-02T15:04:05Z\n"
      "  streamctl seek orders --partition 0 --time=-1h");
  when_chosen(*cmd, chosen, [flags](Context& ctx) {
    return seek_command(ctx, flags->name, flags->partition, flags->time);
  });
}

Status trim_command(Context& ctx, const std::string& name, int32_t partition, uint64_t before) {
  auto first = ctx.admin.trim(name, partition, before);
  if (!first.ok()) return first.error();
  if (ctx.json) {
    ctx.out
        << JsonWriter().begin_object().field("partition", partition).field("first", *first).end_object().str()
        << '\n';
  } else {
    ctx.out << "partition " << partition << " now starts at " << *first << '\n';
  }
  return Status();
}

void add_trim_command(CLI::App& app, ChosenCommand& chosen) {
  struct Flags : StreamPartition {
    uint64_t before = 0;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("trim", "drop a partition's records below an offset");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--partition", flags->partition, "partition")->required();
  cmd->add_option("--before", flags->before, "the new first offset")->required();
  cmd->footer("Example:\n  streamctl trim orders --partition 0 --before 1000");
  when_chosen(*cmd, chosen, [flags](Context& ctx) {
    return trim_command(ctx, flags->name, flags->partition, flags->before);
  });
}

Status compact_command(Context& ctx, const std::string& name, std::optional<int32_t> partition) {
  auto partitions = chosen_partitions(ctx, name, partition);
  if (!partitions.ok()) return partitions.error();
  std::vector<client::CompactResult> results;
  for (int32_t p : *partitions) {
    auto r = ctx.admin.compact(name, p);
    if (!r.ok()) return r.error();
    results.push_back(*r);
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& r : results) {
      w.begin_object()
          .field("partition", r.partition)
          .field("scanned", r.scanned)
          .field("kept", r.kept)
          .field("dropped", r.dropped)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "SCANNED", "KEPT", "DROPPED"}, {true, true, true, true});
  for (const auto& r : results) {
    table.add({std::to_string(r.partition), std::to_string(r.scanned), std::to_string(r.kept),
               std::to_string(r.dropped)});
  }
  table.print(ctx.out);
  return Status();
}

void add_compact_command(CLI::App& app, ChosenCommand& chosen) {
  auto flags = std::make_shared<StreamPartitions>();
  auto* cmd = app.add_subcommand("compact", "keep the last record per key (older than compact_after)");
  cmd->add_option("name", flags->name, "stream name")->required();
  flags->partition.flag =
      cmd->add_option("--partition", flags->partition.value, "one partition (default: all)");
  cmd->footer("Example:\n  streamctl compact profiles --partition 0");
  when_chosen(*cmd, chosen,
              [flags](Context& ctx) { return compact_command(ctx, flags->name, flags->partition.given()); });
}

}  // namespace

void add_offset_commands(CLI::App& app, ChosenCommand& chosen) {
  add_bounds_command(app, chosen);
  add_peek_command(app, chosen);
  add_commit_command(app, chosen);
  add_committed_command(app, chosen);
  add_groups_command(app, chosen);
  add_seek_command(app, chosen);
  add_trim_command(app, chosen);
  add_compact_command(app, chosen);
}

}  // namespace streamd::streamctl
