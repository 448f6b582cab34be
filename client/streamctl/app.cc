#include "client/streamctl/app.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <mutex>
#include <optional>

#include "client/connection.h"
#include "client/duration.h"
#include "client/streamctl/auth_command.h"
#include "client/streamctl/bench.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/output.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Result;
using client::Status;

namespace {

Result<std::chrono::milliseconds> duration_flag(const std::string& text, const char* field) {
  auto d = client::parse_duration(text);
  if (!d.ok()) {
    return Error(ErrorCode::kStreamMisconfigured, d.error().message(), {{"field", field}, {"value", text}});
  }
  return *d;
}

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
  std::string broker_text(client::kDefaultBroker);
  std::string token;
  std::string timeout_text = "10s";
  bool json = false;
  app.add_option("--broker", broker_text, "broker address HOST:PORT")
      ->envname("STREAMD_BROKER")
      ->capture_default_str();
  app.add_option("--token", token, "credential sent in Hello")->envname("STREAMD_TOKEN");
  client::TlsOptions tls;
  app.add_flag("--tls", tls.enabled, "connect with TLS (the broker's tls_listen)")->envname("STREAMD_TLS");
  app.add_option("--ca-file", tls.ca_file, "PEM CAs the broker's certificate must chain to (default: the system's)")
      ->envname("STREAMD_CA_FILE");
  app.add_option("--cert", tls.cert_file, "PEM client certificate (mTLS), with --key")->envname("STREAMD_CERT");
  app.add_option("--key", tls.key_file, "PEM key of --cert (before the command: produce has a --key of its own)")
      ->envname("STREAMD_KEY");
  app.add_option("--server-name", tls.server_name,
                 "the name the broker's certificate must carry (default: the --broker host)")
      ->envname("STREAMD_SERVER_NAME");
  app.add_flag("--json", json, "machine-readable output, one JSON value per line");
  app.add_option("--timeout", timeout_text, "per-request timeout (500ms, 10s, 5m, 2h, 7d, 1h30m)")
      ->capture_default_str();
  app.footer(
      "Durations: 500ms, 10s, 5m, 2h, 7d, 1h30m. TLS: --tls, or any of --ca-file, --cert, --key and\n"
      "--server-name. Run 'streamctl COMMAND --help' for a command's flags.");

  // create
  CreateArgs create;
  std::string retain_for = "0", block_timeout = "0", compact_after = "0";
  auto* create_cmd = app.add_subcommand("create", "create a stream");
  create_cmd->add_option("name", create.name, "stream name")->required();
  create_cmd->add_option("--partitions", create.policy.partitions, "partition count (0: 1)");
  create_cmd->add_option("--max-record-bytes", create.policy.max_record_bytes, "largest record (0: 1 MiB)");
  create_cmd->add_option("--retain-for", retain_for, "keep records this long (0: forever)");
  create_cmd->add_option("--retain-bytes", create.policy.retain_bytes,
                         "bytes kept per partition (0: unbounded)");
  create_cmd->add_option("--max-bytes", create.policy.max_bytes, "bytes the stream may hold (0: unbounded)");
  create_cmd->add_option("--block-timeout", block_timeout, "how long a full stream holds an append");
  create_cmd->add_option("--segment-bytes", create.policy.segment_bytes, "segment size (0: 64 MiB)");
  create_cmd->add_option("--compact-after", compact_after, "age before compaction may drop (0: never)");
  create_cmd->add_flag("--if-not-exists", create.if_not_exists, "succeed when the stream exists");
  create_cmd->footer("Example:\n  streamctl create orders --partitions 8 --retain-for 7d --if-not-exists");

  // delete
  std::string delete_name;
  bool if_exists = false;
  auto* delete_cmd = app.add_subcommand("delete", "delete a stream and its records");
  delete_cmd->add_option("name", delete_name, "stream name")->required();
  delete_cmd->add_flag("--if-exists", if_exists, "succeed when the stream is absent");
  delete_cmd->footer("Example:\n  streamctl delete orders --if-exists");

  auto* list_cmd = app.add_subcommand("list", "list streams");
  list_cmd->footer("Example:\n  streamctl list --json");

  std::string describe_name;
  auto* describe_cmd = app.add_subcommand("describe", "policy and per-partition bounds, bytes and segments");
  describe_cmd->add_option("name", describe_name, "stream name")->required();
  describe_cmd->footer("Example:\n  streamctl describe orders");

  // produce
  ProduceArgs produce;
  std::string key;
  std::string key_separator;
  auto* produce_cmd = app.add_subcommand("produce", "append records from --value or stdin lines");
  produce_cmd->add_option("name", produce.name, "stream name")->required();
  auto* key_opt = produce_cmd->add_option("--key", key, "key of every record");
  produce_cmd->add_option("--value", produce.values, "record payloads (else one per stdin line)");
  auto* separator_opt =
      produce_cmd->add_option("--key-separator", key_separator, "split each value into KEY SEP PAYLOAD");
  produce_cmd->add_option("--header", produce.headers, "NAME=VALUE header on every record");
  produce_cmd->add_option("--batch", produce.batch, "records per batch")->capture_default_str();
  produce_cmd->add_flag("--base64", produce.base64, "keys, values and lines are base64 (binary records)");
  produce_cmd->footer(
      "Example:\n  printf 'user1:hello\\nuser2:world\\n' | streamctl produce events --key-separator :");

  // consume
  ConsumeArgs consume;
  uint64_t consume_max = 0;
  std::string consume_group;
  auto* consume_cmd = app.add_subcommand("consume", "print entries, to the end or following new ones");
  consume_cmd->add_option("name", consume.name, "stream name")->required();
  consume_cmd->add_option("--partition", consume.partitions,
                          "partitions to read (default: all, interleaved)");
  consume_cmd->add_option("--from", consume.from, "earliest | latest | OFFSET | @RFC3339 | @-DURATION")
      ->capture_default_str();
  auto* max_opt = consume_cmd->add_option("--max", consume_max, "stop after this many entries");
  consume_cmd->add_flag("--follow", consume.follow, "wait for new entries until SIGINT/SIGTERM");
  auto* group_opt =
      consume_cmd->add_option("--group", consume_group, "start at and commit this group's offsets");
  consume_cmd->footer("Example:\n  streamctl consume events --group audit --follow --json");

  // bounds, peek
  std::string bounds_name;
  int32_t bounds_partition = 0;
  auto* bounds_cmd = app.add_subcommand("bounds", "first and next offsets of partitions");
  bounds_cmd->add_option("name", bounds_name, "stream name")->required();
  auto* bounds_partition_opt =
      bounds_cmd->add_option("--partition", bounds_partition, "one partition (default: all)");
  bounds_cmd->footer("Example:\n  streamctl bounds orders --partition 0");

  std::string peek_name;
  int32_t peek_partition = 0;
  auto* peek_cmd = app.add_subcommand("peek", "the last entry of a partition");
  peek_cmd->add_option("name", peek_name, "stream name")->required();
  peek_cmd->add_option("--partition", peek_partition, "partition")->required();
  peek_cmd->footer("Example:\n  streamctl peek orders --partition 0 --json");

  // commit, committed, groups
  std::string commit_name, commit_group;
  int32_t commit_partition = 0;
  uint64_t commit_offset = 0;
  auto* commit_cmd = app.add_subcommand("commit", "set a group's next offset on a partition");
  commit_cmd->add_option("name", commit_name, "stream name")->required();
  commit_cmd->add_option("--group", commit_group, "consumer group")->required();
  commit_cmd->add_option("--partition", commit_partition, "partition")->required();
  commit_cmd->add_option("--offset", commit_offset, "the offset the group reads next")->required();
  commit_cmd->footer("Example:\n  streamctl commit orders --group billing --partition 0 --offset 120");

  std::string committed_name, committed_group;
  int32_t committed_partition = 0;
  auto* committed_cmd = app.add_subcommand("committed", "a group's committed offsets");
  committed_cmd->add_option("name", committed_name, "stream name")->required();
  committed_cmd->add_option("--group", committed_group, "consumer group")->required();
  auto* committed_partition_opt =
      committed_cmd->add_option("--partition", committed_partition, "one partition (default: all)");
  committed_cmd->footer("Example:\n  streamctl committed orders --group billing");

  std::string groups_name;
  auto* groups_cmd = app.add_subcommand("groups", "every group's committed offset and lag per partition");
  groups_cmd->add_option("name", groups_name, "stream name")->required();
  groups_cmd->footer("Example:\n  streamctl groups orders");

  // seek, trim, compact, health
  std::string seek_name, seek_time;
  int32_t seek_partition = 0;
  auto* seek_cmd = app.add_subcommand("seek", "the first offset appended at or after a time");
  seek_cmd->add_option("name", seek_name, "stream name")->required();
  seek_cmd->add_option("--partition", seek_partition, "partition")->required();
  seek_cmd->add_option("--time", seek_time, "RFC 3339 time, or -DURATION before now")->required();
  seek_cmd->footer(
      "Example:\n  streamctl seek orders --partition 0 --time 2026-01-02T15:04:05Z\n"
      "  streamctl seek orders --partition 0 --time=-1h");

  std::string trim_name;
  int32_t trim_partition = 0;
  uint64_t trim_before = 0;
  auto* trim_cmd = app.add_subcommand("trim", "drop a partition's records below an offset");
  trim_cmd->add_option("name", trim_name, "stream name")->required();
  trim_cmd->add_option("--partition", trim_partition, "partition")->required();
  trim_cmd->add_option("--before", trim_before, "the new first offset")->required();
  trim_cmd->footer("Example:\n  streamctl trim orders --partition 0 --before 1000");

  std::string compact_name;
  int32_t compact_partition = 0;
  auto* compact_cmd =
      app.add_subcommand("compact", "keep the last record per key (older than compact_after)");
  compact_cmd->add_option("name", compact_name, "stream name")->required();
  auto* compact_partition_opt =
      compact_cmd->add_option("--partition", compact_partition, "one partition (default: all)");
  compact_cmd->footer("Example:\n  streamctl compact profiles --partition 0");

  auto* health_cmd = app.add_subcommand("health", "broker status, version, uptime and stream count");
  health_cmd->footer("Example:\n  streamctl health --json");

  BenchArgs bench;
  CLI::App* bench_cmd = add_bench_command(app, bench);
  AuthArgs auth;
  CLI::App* auth_cmd = add_auth_command(app, auth);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : kUsageExitCode;
  }

  auto timeout = duration_flag(timeout_text, "timeout");
  if (!timeout.ok()) return report(timeout.error(), json, err);
  if (timeout->count() <= 0) {
    return report(Error(ErrorCode::kStreamMisconfigured, "the timeout must be positive",
                        {{"field", "timeout"}, {"value", timeout_text}}),
                  json, err);
  }
  auto broker = client::parse_broker_address(broker_text);
  if (!broker.ok()) return report(broker.error(), json, err);

  client::ConnectionOptions options;
  options.broker = *broker;
  options.token = token;
  // Any of the TLS options asks for TLS: a CA file given to a plaintext connection would be ignored.
  tls.enabled = tls.enabled || !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty() ||
                !tls.server_name.empty();
  options.tls = tls;
  options.client_name = "streamctl";
  options.request_timeout = *timeout;
  // A long-running command rides out a broker restart, saying so once per outage; a one-shot
  // command reports a refused connection at once.
  const bool long_running = (produce_cmd->parsed() && produce.values.empty()) ||
                            (consume_cmd->parsed() && consume.follow) || bench_cmd->parsed();
  std::mutex notice_mutex;  // the notices come from whichever thread was connecting
  if (long_running) {
    options.on_unreachable = [&](const Error& error) {
      std::lock_guard lock(notice_mutex);
      err << "streamctl: " << error.to_string() << "; reconnecting" << std::endl;
    };
    options.on_reachable = [&, address = broker_text] {
      std::lock_guard lock(notice_mutex);
      err << "streamctl: reconnected to " << address << std::endl;
    };
  } else {
    options.fail_when_refused = true;
  }
  client::Connection connection(options);
  Context ctx{connection, client::Admin(connection), json, in, out, err, interrupted};

  Status status;
  if (create_cmd->parsed()) {
    for (auto [text, target, field] :
         {std::tuple{&retain_for, &create.policy.retain_for, "retain_for"},
          std::tuple{&block_timeout, &create.policy.block_timeout, "block_timeout"},
          std::tuple{&compact_after, &create.policy.compact_after, "compact_after"}}) {
      auto d = duration_flag(*text, field);
      if (!d.ok()) return report(d.error(), json, err);
      *target = *d;
    }
    status = create_command(ctx, create);
  } else if (delete_cmd->parsed()) {
    status = delete_command(ctx, delete_name, if_exists);
  } else if (list_cmd->parsed()) {
    status = list_command(ctx);
  } else if (describe_cmd->parsed()) {
    status = describe_command(ctx, describe_name);
  } else if (produce_cmd->parsed()) {
    if (key_opt->count() > 0) produce.key = key;
    if (separator_opt->count() > 0) produce.key_separator = key_separator;
    status = produce_command(ctx, produce);
  } else if (consume_cmd->parsed()) {
    if (max_opt->count() > 0) consume.max = consume_max;
    if (group_opt->count() > 0) consume.group = consume_group;
    status = consume_command(ctx, consume);
  } else if (bounds_cmd->parsed()) {
    status = bounds_command(
        ctx, bounds_name, bounds_partition_opt->count() > 0 ? std::optional(bounds_partition) : std::nullopt);
  } else if (peek_cmd->parsed()) {
    status = peek_command(ctx, peek_name, peek_partition);
  } else if (commit_cmd->parsed()) {
    status = commit_command(ctx, commit_name, commit_group, commit_partition, commit_offset);
  } else if (committed_cmd->parsed()) {
    status = committed_command(
        ctx, committed_name, committed_group,
        committed_partition_opt->count() > 0 ? std::optional(committed_partition) : std::nullopt);
  } else if (groups_cmd->parsed()) {
    status = groups_command(ctx, groups_name);
  } else if (seek_cmd->parsed()) {
    status = seek_command(ctx, seek_name, seek_partition, seek_time);
  } else if (trim_cmd->parsed()) {
    status = trim_command(ctx, trim_name, trim_partition, trim_before);
  } else if (compact_cmd->parsed()) {
    status =
        compact_command(ctx, compact_name,
                        compact_partition_opt->count() > 0 ? std::optional(compact_partition) : std::nullopt);
  } else if (health_cmd->parsed()) {
    status = health_command(ctx);
  } else if (bench_cmd->parsed()) {
    status = bench_command(ctx, bench);
  } else if (auth_cmd->parsed()) {
    status = auth_command(ctx, auth);
  }
  out.flush();
  if (!status.ok()) return report(status.error(), json, err);
  return 0;
}

}  // namespace streamd::streamctl
