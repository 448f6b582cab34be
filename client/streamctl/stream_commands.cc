// The stream commands: create, alter, delete, list and describe, each registered with its flags beside
// the code that runs it.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "client/duration.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/duration_flag.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/output.h"
#include "client/streamctl/timestamp.h"

namespace streamd::streamctl {

using client::Status;

namespace {

void print_policy_text(std::ostream& out, const client::Policy& p) {
  auto bytes_or = [](int64_t v, const char* zero) { return v == 0 ? std::string(zero) : std::to_string(v); };
  auto duration_or = [](std::chrono::milliseconds d, const char* zero) {
    return d.count() == 0 ? std::string(zero) : client::format_duration(d);
  };
  out << "partitions:        " << p.partitions << '\n'
      << "max_record_bytes:  " << bytes_or(p.max_record_bytes, "default") << '\n'
      << "retain_for:        " << duration_or(p.retain_for, "forever") << '\n'
      << "retain_bytes:      " << bytes_or(p.retain_bytes, "unbounded") << '\n'
      << "max_bytes:         " << bytes_or(p.max_bytes, "unbounded") << '\n'
      << "block_timeout:     " << duration_or(p.block_timeout, "0") << '\n'
      << "segment_bytes:     " << bytes_or(p.segment_bytes, "default") << '\n'
      << "compact_after:     " << duration_or(p.compact_after, "never") << '\n'
      << "timestamp_type:    " << timestamp_type_name(p.timestamp_type) << '\n';
}

// The policy flags create and alter share. Durations and the timestamp type stay text until the command
// runs, where a bad one is refused naming its flag; the numbers go straight into `Fields`, a
// client::Policy for create and a client::PolicyChange for alter (the same field names), where a flag
// not given leaves its field as it was: the default for create, unchanged for alter.
struct PolicyText {
  std::optional<std::string> retain_for, block_timeout, compact_after, timestamp_type;
};

template <class Fields>
void add_policy_options(CLI::App& cmd, Fields& fields, PolicyText& text) {
  cmd.add_option("--max-record-bytes", fields.max_record_bytes, "largest record (0: 1 MiB)");
  cmd.add_option("--retain-for", text.retain_for, "keep records this long (0: forever)");
  cmd.add_option("--retain-bytes", fields.retain_bytes, "bytes kept per partition (0: unbounded)");
  cmd.add_option("--max-bytes", fields.max_bytes, "bytes the stream may hold (0: unbounded)");
  cmd.add_option("--block-timeout", text.block_timeout, "how long a full stream holds an append");
  cmd.add_option("--segment-bytes", fields.segment_bytes, "segment size (0: 64 MiB); a change applies from the next roll");
  cmd.add_option("--compact-after", text.compact_after, "age before compaction may drop (0: never)");
  cmd.add_option("--timestamp-type", text.timestamp_type,
                 "what Kafka consumers see as a record's time: CreateTime (the producer's, default) or "
                 "LogAppendTime")
      ->check(CLI::IsMember({"CreateTime", "LogAppendTime"}));
}

// `text`'s flags, those given, into `fields`.
template <class Fields>
Status parse_policy_text(const PolicyText& text, Fields& fields) {
  for (auto [given, target, field] :
       {std::tuple{&text.retain_for, &fields.retain_for, "retain_for"},
        std::tuple{&text.block_timeout, &fields.block_timeout, "block_timeout"},
        std::tuple{&text.compact_after, &fields.compact_after, "compact_after"}}) {
    if (!*given) continue;
    auto d = duration_flag(**given, field);
    if (!d.ok()) return d.error();
    *target = *d;
  }
  // The option's check admits the two names alone.
  if (text.timestamp_type) {
    fields.timestamp_type = *text.timestamp_type == "LogAppendTime" ? client::TimestampType::kLogAppendTime
                                                                     : client::TimestampType::kCreateTime;
  }
  return Status();
}

// The policy a create or an alter answered, as JSON (with `extra` fields before it) or as text.
void print_answered_policy(Context& ctx, const std::string& name, const client::Policy& policy,
                           const std::string& headline, const std::function<void(JsonWriter&)>& extra = {}) {
  if (ctx.json) {
    JsonWriter w;
    w.begin_object().field("name", name);
    if (extra) extra(w);
    w.key("policy");
    write_policy(w, policy);
    w.end_object();
    ctx.out << w.str() << '\n';
  } else {
    ctx.out << headline << name << '\n';
    print_policy_text(ctx.out, policy);
  }
}

struct CreateFlags {
  std::string name;
  client::Policy policy;
  PolicyText text;
  bool if_not_exists = false;
};

Status create_command(Context& ctx, const CreateFlags& flags) {
  client::Policy policy = flags.policy;
  if (Status s = parse_policy_text(flags.text, policy); !s.ok()) return s;
  auto created = ctx.admin.create_stream(flags.name, policy, flags.if_not_exists);
  if (!created.ok()) return created.error();
  print_answered_policy(ctx, created->name, created->policy,
                        created->created ? "created stream " : "stream already exists: ");
  return Status();
}

void add_create_command(CLI::App& app, ChosenCommand& chosen) {
  auto flags = std::make_shared<CreateFlags>();
  auto* cmd = app.add_subcommand("create", "create a stream");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--partitions", flags->policy.partitions, "partition count (0: 1)");
  add_policy_options(*cmd, flags->policy, flags->text);
  cmd->add_flag("--if-not-exists", flags->if_not_exists, "succeed when the stream exists");
  cmd->footer("Example:\n  streamctl create orders --partitions 8 --retain-for 7d --if-not-exists");
  when_chosen(*cmd, chosen, [flags](Context& ctx) { return create_command(ctx, *flags); });
}

struct AlterFlags {
  std::string name;
  client::PolicyChange change;
  PolicyText text;
  bool validate_only = false;
};

Status alter_command(Context& ctx, const AlterFlags& flags) {
  client::PolicyChange change = flags.change;
  if (Status s = parse_policy_text(flags.text, change); !s.ok()) return s;
  if (change == client::PolicyChange{}) {
    return client::Error(client::ErrorCode::kStreamMisconfigured,
                         "nothing to change: give the policy flags to change (--retain-for, --retain-bytes, "
                         "--max-bytes, --block-timeout, --segment-bytes, --compact-after, --max-record-bytes, "
                         "--timestamp-type)",
                         {{"field", "policy"}});
  }
  auto policy = ctx.admin.alter_stream(flags.name, change, flags.validate_only);
  if (!policy.ok()) return policy.error();
  print_answered_policy(ctx, flags.name, *policy, flags.validate_only ? "would alter stream " : "altered stream ",
                        [&flags](JsonWriter& w) { w.field("validate_only", flags.validate_only); });
  return Status();
}

void add_alter_command(CLI::App& app, ChosenCommand& chosen) {
  auto flags = std::make_shared<AlterFlags>();
  auto* cmd = app.add_subcommand("alter", "change a stream's policy (only the flags given change)");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_option("--partitions", flags->change.partitions, "fixed for a stream's life: only its count is accepted");
  add_policy_options(*cmd, flags->change, flags->text);
  cmd->add_flag("--validate-only", flags->validate_only, "check the change and show the result; change nothing");
  cmd->footer("Example:\n  streamctl alter orders --retain-for 3d --retain-bytes 10000000000");
  when_chosen(*cmd, chosen, [flags](Context& ctx) { return alter_command(ctx, *flags); });
}

Status delete_command(Context& ctx, const std::string& name, bool if_exists) {
  auto deleted = ctx.admin.delete_stream(name, if_exists);
  if (!deleted.ok()) return deleted.error();
  if (ctx.json) {
    ctx.out << JsonWriter().begin_object().field("name", name).end_object().str() << '\n';
  } else {
    ctx.out << (*deleted ? "deleted stream " : "no such stream: ") << name << '\n';
  }
  return Status();
}

void add_delete_command(CLI::App& app, ChosenCommand& chosen) {
  struct Flags {
    std::string name;
    bool if_exists = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("delete", "delete a stream and its records");
  cmd->add_option("name", flags->name, "stream name")->required();
  cmd->add_flag("--if-exists", flags->if_exists, "succeed when the stream is absent");
  cmd->footer("Example:\n  streamctl delete orders --if-exists");
  when_chosen(*cmd, chosen,
              [flags](Context& ctx) { return delete_command(ctx, flags->name, flags->if_exists); });
}

Status list_command(Context& ctx) {
  auto streams = ctx.admin.list_streams();
  if (!streams.ok()) return streams.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& s : *streams)
      w.begin_object().field("name", s.name).field("partitions", s.partitions).end_object();
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"NAME", "PARTITIONS"}, {false, true});
  for (const auto& s : *streams) table.add({s.name, std::to_string(s.partitions)});
  table.print(ctx.out);
  return Status();
}

void add_list_command(CLI::App& app, ChosenCommand& chosen) {
  auto* cmd = app.add_subcommand("list", "list streams");
  cmd->footer("Example:\n  streamctl list --json");
  when_chosen(*cmd, chosen, list_command);
}

Status describe_command(Context& ctx, const std::string& name) {
  auto d = ctx.admin.describe_stream(name);
  if (!d.ok()) return d.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_object().field("name", d->name).key("policy");
    write_policy(w, d->policy);
    w.key("partitions").begin_array();
    for (const auto& p : d->partitions) {
      w.begin_object()
          .field("partition", p.partition)
          .field("first", p.first)
          .field("next", p.next)
          .field("bytes", p.bytes)
          .field("segments", p.segments)
          .end_object();
    }
    w.end_array().end_object();
    ctx.out << w.str() << '\n';
    return Status();
  }
  ctx.out << "stream:            " << d->name << '\n';
  if (d->created_at_us != 0) ctx.out << "created_at:        " << format_rfc3339_us(d->created_at_us) << '\n';
  print_policy_text(ctx.out, d->policy);
  ctx.out << '\n';
  Table table({"PARTITION", "FIRST", "NEXT", "BYTES", "SEGMENTS"}, {true, true, true, true, true});
  for (const auto& p : d->partitions) {
    table.add({std::to_string(p.partition), std::to_string(p.first), std::to_string(p.next),
               std::to_string(p.bytes), std::to_string(p.segments)});
  }
  table.print(ctx.out);
  return Status();
}

void add_describe_command(CLI::App& app, ChosenCommand& chosen) {
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("describe", "policy and per-partition bounds, bytes and segments");
  cmd->add_option("name", *name, "stream name")->required();
  cmd->footer("Example:\n  streamctl describe orders");
  when_chosen(*cmd, chosen, [name](Context& ctx) { return describe_command(ctx, *name); });
}

}  // namespace

void add_stream_commands(CLI::App& app, ChosenCommand& chosen) {
  add_create_command(app, chosen);
  add_alter_command(app, chosen);
  add_delete_command(app, chosen);
  add_list_command(app, chosen);
  add_describe_command(app, chosen);
}

}  // namespace streamd::streamctl
