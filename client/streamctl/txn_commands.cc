// `streamctl txn list|describe|abort`: what the broker's transaction coordinator holds of each
// transactional id, and an operator's end of a hung transaction (docs/TRANSACTIONS.md §Operations).
// They take admin on every stream (docs/SECURITY.md).
#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/duration.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/output.h"
#include "client/streamctl/timestamp.h"
#include "client/txn_admin.h"

namespace streamd::streamctl {

using client::Status;
using client::TransactionInfo;

namespace {

bool is_open(const TransactionInfo& t) {
  return t.state == "Ongoing" || t.state == "PrepareCommit" || t.state == "PrepareAbort";
}

// How long the open transaction has run, by this machine's clock; "-" when none is open.
std::string age(const TransactionInfo& t) {
  if (!is_open(t)) return "-";
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return client::format_duration(std::chrono::milliseconds(std::max<int64_t>(0, (now_us - t.started_at_us) / 1000)));
}

void write_transaction(JsonWriter& w, const TransactionInfo& t) {
  w.begin_object()
      .field("transactional_id", t.transactional_id)
      .field("producer_id", t.producer.id)
      .field("epoch", t.producer.epoch)
      .field("state", t.state)
      .field("timeout_ms", t.timeout_ms)
      .field("started_at", format_rfc3339_us(t.started_at_us));
  w.key("partitions").begin_array();
  for (const auto& p : t.partitions) w.begin_object().field("stream", p.stream).field("partition", p.partition).end_object();
  w.end_array();
  w.key("groups").begin_array();
  for (const auto& g : t.groups) w.string(g);
  w.end_array();
  w.key("offsets").begin_array();
  for (const auto& o : t.offsets) {
    w.begin_object()
        .field("group", o.group)
        .field("stream", o.stream)
        .field("partition", o.partition)
        .field("next", o.next)
        .end_object();
  }
  w.end_array();
  w.end_object();
}

void print_transaction(Context& ctx, const TransactionInfo& t) {
  if (ctx.json) {
    JsonWriter w;
    write_transaction(w, t);
    ctx.out << w.str() << '\n';
    return;
  }
  ctx.out << "transactional id: " << t.transactional_id << '\n'
          << "producer:         " << t.producer.id << " epoch " << t.producer.epoch << '\n'
          << "state:            " << t.state << '\n'
          << "timeout:          " << client::format_duration(std::chrono::milliseconds(t.timeout_ms)) << '\n'
          << "began:            " << format_rfc3339_us(t.started_at_us) << " (open for " << age(t) << ")\n";
  for (const auto& p : t.partitions) ctx.out << "partition:        " << p.stream << '/' << p.partition << '\n';
  for (const auto& g : t.groups) ctx.out << "group:            " << g << '\n';
  for (const auto& o : t.offsets) {
    ctx.out << "staged offset:    " << o.group << ' ' << o.stream << '/' << o.partition << " next " << o.next << '\n';
  }
}

Status list_command(Context& ctx, bool open_only) {
  auto all = client::TxnAdmin(ctx.connection).list();
  if (!all.ok()) return all.error();
  std::vector<TransactionInfo> shown;
  for (TransactionInfo& t : *all) {
    if (!open_only || is_open(t)) shown.push_back(std::move(t));
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& t : shown) write_transaction(w, t);
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"TRANSACTIONAL ID", "PRODUCER", "EPOCH", "STATE", "OPEN FOR", "PARTITIONS", "TIMEOUT"},
              {false, true, true, false, true, true, true});
  for (const auto& t : shown) {
    table.add({t.transactional_id, std::to_string(t.producer.id), std::to_string(t.producer.epoch), t.state, age(t),
               std::to_string(t.partitions.size()),
               client::format_duration(std::chrono::milliseconds(t.timeout_ms))});
  }
  table.print(ctx.out);
  return Status();
}

}  // namespace

void add_txn_commands(CLI::App& app, ChosenCommand& chosen) {
  auto* txn = app.add_subcommand("txn", "transactions: list, describe, abort");
  txn->require_subcommand(1);

  auto open_only = std::make_shared<bool>(false);
  auto* list = txn->add_subcommand("list", "every transactional id the broker coordinates");
  list->add_flag("--open", *open_only, "only those with a transaction open or being ended");
  list->footer("Example:\n  streamctl txn list --open");
  when_chosen(*list, chosen, [open_only](Context& ctx) { return list_command(ctx, *open_only); });

  auto id = std::make_shared<std::string>();
  auto* describe = txn->add_subcommand("describe", "an id's producer, state, partitions and staged offsets");
  describe->add_option("id", *id, "transactional id")->required();
  describe->footer("Example:\n  streamctl txn describe billing-worker-1");
  when_chosen(*describe, chosen, [id](Context& ctx) -> Status {
    auto t = client::TxnAdmin(ctx.connection).describe(*id);
    if (!t.ok()) return t.error();
    print_transaction(ctx, *t);
    return Status();
  });

  auto* abort = txn->add_subcommand(
      "abort", "abort an id's open transaction, fencing its producer (a decided one is finished as decided)");
  abort->add_option("id", *id, "transactional id")->required();
  abort->footer("Example:\n  streamctl txn abort billing-worker-1");
  when_chosen(*abort, chosen, [id](Context& ctx) -> Status {
    auto t = client::TxnAdmin(ctx.connection).abort(*id);
    if (!t.ok()) return t.error();
    print_transaction(ctx, *t);
    return Status();
  });
}

}  // namespace streamd::streamctl
