// `streamctl produce`: records from --value or from stdin, one per line, through the batching
// Producer. Lines are read one at a time and the Producer bounds what waits for an answer, so a stdin
// of any size is streamed in constant memory.
//
// Each acknowledged batch prints its line from the connection's reactor thread while this thread
// reads the input, so the output is written under one mutex and the input is untied from it for the
// command: a tied input stream flushes its output (std::cin flushes std::cout) before every read, a
// write to the output from this thread that raced the reactor's and lost acknowledgement lines.
//
// On SIGINT/SIGTERM (ctx.interrupted) the input stops, the batches in flight get kInterruptGrace to be
// answered, and what is still unanswered then is given up on (Producer::abandon): the command ends
// in bounded time, broker or no broker, with an error that counts the unacknowledged records.
//
// With --transactional-id, every --batch records (and what is left when the input ends) are one
// transaction through a TransactionalProducer, committed before the next begins: a reader at
// read_committed sees each batch whole or not at all, and a run killed midway leaves its open
// transaction to be aborted by the broker (at once when the id is opened again). A transaction's
// acknowledgement lines print once it has committed. A failure or an interrupt aborts the open
// transaction and ends the command with an error that counts what was committed.
#include <CLI/CLI.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/producer.h"
#include "client/streamctl/duration_flag.h"
#include "client/transactional_producer.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/interrupt_watch.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/text_encoding.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Result;
using client::Status;

namespace {

struct ProduceArgs {
  std::string name;
  std::optional<std::string> key;
  std::vector<std::string> values;
  std::optional<std::string> key_separator;
  std::vector<std::string> headers;  // NAME=VALUE
  size_t batch = 1000;
  bool base64 = false;  // key, values and stdin lines are base64
  bool no_idempotence = false;  // at-least-once: a resend after a lost answer may write a batch twice
  std::optional<std::string> transactional_id;  // each --batch records are one transaction
  std::string transaction_timeout = "60s";
};

// How long an interrupted produce still waits for the answers to the batches it sent.
constexpr std::chrono::milliseconds kInterruptGrace{2000};

// Restores a stream's tie when the command ends.
class Untied {
 public:
  explicit Untied(std::istream& in) : in_(in), tie_(in.tie(nullptr)) {}
  ~Untied() { in_.tie(tie_); }
  Untied(const Untied&) = delete;
  Untied& operator=(const Untied&) = delete;

 private:
  std::istream& in_;
  std::ostream* const tie_;
};

Result<std::string> decoded(const std::string& text, bool base64, const char* field) {
  if (!base64) return text;
  auto bytes = base64_decode(text);
  if (!bytes) return Error(ErrorCode::kStreamMisconfigured, "not base64 text", {{"field", field}});
  return *bytes;
}

// Turns the command's arguments and each input line into a Record: the --header and --key given once
// for all, a key cut off each line at --key-separator, and base64 decoded under --base64.
class RecordMaker {
 public:
  static Result<RecordMaker> make(const ProduceArgs& args) {
    RecordMaker maker(args);
    for (const std::string& h : args.headers) {
      const size_t eq = h.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Error(ErrorCode::kStreamMisconfigured, "a header is NAME=VALUE", {{"field", "header"}, {"value", h}});
      }
      auto value = decoded(h.substr(eq + 1), args.base64, "header");
      if (!value.ok()) return value.error();
      maker.headers_.push_back({h.substr(0, eq), *value});
    }
    if (args.key) {
      auto key = decoded(*args.key, args.base64, "key");
      if (!key.ok()) return key.error();
      maker.fixed_key_ = *key;
    }
    return maker;
  }

  Result<client::Record> record(const std::string& text) const {
    client::Record record;
    record.key = fixed_key_;
    std::string value = text;
    if (args_.key_separator && !args_.key_separator->empty()) {
      const size_t at = text.find(*args_.key_separator);
      if (at != std::string::npos) {
        auto key = decoded(text.substr(0, at), args_.base64, "key");
        if (!key.ok()) return key.error();
        record.key = *key;
        value = text.substr(at + args_.key_separator->size());
      }
    }
    auto payload = decoded(value, args_.base64, "value");
    if (!payload.ok()) return payload.error();
    record.payload = std::move(*payload);
    record.headers = headers_;
    return record;
  }

 private:
  explicit RecordMaker(const ProduceArgs& args) : args_(args) {}

  const ProduceArgs& args_;
  std::vector<client::Header> headers_;
  std::string fixed_key_;
};

// The line an acknowledged batch prints.
std::string acknowledgement_line(const client::AppendResult& r, bool json) {
  if (!json) {
    return "partition " + std::to_string(r.partition) + ": offsets " + std::to_string(r.first) + ".." +
           std::to_string(r.last) + "\n";
  }
  return JsonWriter()
             .begin_object()
             .field("partition", r.partition)
             .field("first", r.first)
             .field("last", r.last)
             .end_object()
             .str() +
         "\n";
}

// The first failure, with the count of records that the printed lines do not cover.
Error unacknowledged_error(const Error& failure, uint64_t unacknowledged, uint64_t sent) {
  Error error(failure.code(), failure.name(),
              failure.message() + "; " + std::to_string(unacknowledged) + " of " + std::to_string(sent) +
                  " records were not acknowledged",
              failure.fields());
  return error.with("unacknowledged", std::to_string(unacknowledged));
}

// Feeds `send` the --value arguments or the input's lines until one fails, `stop` says so, or the
// input ends.
Status feed(Context& ctx, const ProduceArgs& args, const std::function<bool()>& stop,
            const std::function<Status(const std::string&)>& send) {
  if (!args.values.empty()) {
    for (const std::string& v : args.values) {
      if (stop()) return Status();
      if (Status s = send(v); !s.ok()) return s;
    }
    return Status();
  }
  std::string line;
  while (!stop() && !ctx.interrupted && std::getline(ctx.in, line)) {
    if (Status s = send(line); !s.ok()) return s;
  }
  return Status();
}

// --transactional-id: see the top of this file.
Status transactional_produce(Context& ctx, const ProduceArgs& args, const RecordMaker& maker) {
  auto timeout = duration_flag(args.transaction_timeout, "transaction_timeout");
  if (!timeout.ok()) return timeout.error();
  std::mutex mutex;
  std::vector<client::AppendResult> acknowledged;  // of the open transaction
  client::TransactionOptions options;
  options.transaction_timeout = *timeout;
  options.producer.batch_records = args.batch;
  options.producer.linger = std::chrono::milliseconds(10);
  options.producer.max_buffered_bytes = 8 << 20;
  options.producer.on_batch = [&](const client::AppendResult& r) {
    std::lock_guard lock(mutex);
    acknowledged.push_back(r);
  };
  auto txn = client::TransactionalProducer::open(ctx.connection, *args.transactional_id, options);
  if (!txn.ok()) return txn.error();
  const Untied untied(ctx.in);

  uint64_t committed = 0;
  uint64_t open = 0;  // records sent in the open transaction
  auto commit = [&]() -> Status {
    if (open == 0) return Status();
    if (Status s = (*txn)->commit(); !s.ok()) return s;
    std::lock_guard lock(mutex);
    for (const client::AppendResult& r : acknowledged) ctx.out << acknowledgement_line(r, ctx.json);
    ctx.out.flush();
    acknowledged.clear();
    committed += open;
    open = 0;
    return Status();
  };
  Status failure = feed(
      ctx, args, [] { return false; },
      [&](const std::string& text) -> Status {
        Result<client::Record> record = maker.record(text);
        if (!record.ok()) return record.error();
        (*txn)->send(args.name, std::move(*record));
        return ++open >= args.batch ? commit() : Status();
      });
  if (failure.ok() && ctx.interrupted) {
    failure = Error(ErrorCode::kUnavailable, "interrupted", {{"reason", "interrupted"}});
  }
  if (failure.ok()) failure = commit();
  if (failure.ok()) return Status();
  const uint64_t aborted = open;
  (void)(*txn)->abort();  // the broker aborts it at its timeout if this cannot
  Error error(failure.error().code(), failure.error().name(),
              failure.error().message() + "; " + std::to_string(committed) + " records were committed, the " +
                  std::to_string(aborted) + " of the open transaction aborted",
              failure.error().fields());
  return error.with("committed", std::to_string(committed));
}

Status produce_command(Context& ctx, const ProduceArgs& args) {
  if (args.batch == 0) return Error(ErrorCode::kInvalidBatchSize, {{"field", "batch"}, {"value", "0"}});
  Result<RecordMaker> maker = RecordMaker::make(args);
  if (!maker.ok()) return maker.error();
  if (args.transactional_id) return transactional_produce(ctx, args, *maker);

  std::mutex mutex;
  std::optional<Error> failure;
  client::ProducerOptions options;
  options.batch_records = args.batch;
  options.linger = std::chrono::milliseconds(10);
  options.max_buffered_bytes = 8 << 20;
  options.idempotent = !args.no_idempotence;
  options.on_batch = [&](const client::AppendResult& r) {
    std::lock_guard lock(mutex);
    ctx.out << acknowledgement_line(r, ctx.json);
    // Each line shows as soon as its batch is durable, for whoever follows the output.
    ctx.out.flush();
  };
  auto producer = client::Producer::open(ctx.connection, args.name, options);
  if (!producer.ok()) return producer.error();
  const Untied untied(ctx.in);

  // Gives up on what is unanswered kInterruptGrace after an interrupt; the Producer's own delivery
  // timeout ends a batch sooner where less of it is left.
  std::optional<InterruptWatch> interrupt_watch(std::in_place, ctx.interrupted, kInterruptGrace, [&] {
    (*producer)->abandon(Error(ErrorCode::kUnavailable, "interrupted before the broker answered",
                               {{"reason", "interrupted"}}));
  });

  auto on_delivery = [&](const Result<client::Delivery>& d) {
    if (d.ok()) return;
    std::lock_guard lock(mutex);
    if (!failure) failure = d.error();
  };
  auto failed = [&] {
    std::lock_guard lock(mutex);
    return failure.has_value();
  };
  uint64_t sent = 0;
  auto send = [&](const std::string& text) -> Status {
    Result<client::Record> record = maker->record(text);
    if (!record.ok()) return record.error();
    (*producer)->send(std::move(*record), on_delivery);
    ++sent;
    return Status();
  };

  // The input ends at its first bad line, or once a record has failed: what follows would fail the
  // same way.
  const Status input_error = feed(ctx, args, failed, send);
  (*producer)->flush();
  interrupt_watch.reset();
  ctx.out.flush();
  if (!input_error.ok()) return input_error;
  std::lock_guard lock(mutex);
  if (failure) return unacknowledged_error(*failure, (*producer)->failed_records(), sent);
  return Status();
}

}  // namespace

void add_produce_command(CLI::App& app, ChosenCommand& chosen) {
  // --key and --key-separator are told apart from an empty one by whether they were given.
  struct Flags {
    ProduceArgs args;
    std::string key;
    std::string key_separator;
    std::string transactional_id;
  };
  auto flags = std::make_shared<Flags>();
  ProduceArgs& args = flags->args;
  auto* cmd = app.add_subcommand("produce", "append records from --value or stdin lines");
  cmd->add_option("name", args.name, "stream name")->required();
  const CLI::Option* key = cmd->add_option("--key", flags->key, "key of every record");
  cmd->add_option("--value", args.values, "record payloads (else one per stdin line)");
  const CLI::Option* separator =
      cmd->add_option("--key-separator", flags->key_separator, "split each value into KEY SEP PAYLOAD");
  cmd->add_option("--header", args.headers, "NAME=VALUE header on every record");
  cmd->add_option("--batch", args.batch, "records per batch")->capture_default_str();
  cmd->add_flag("--base64", args.base64, "keys, values and lines are base64 (binary records)");
  cmd->add_flag("--no-idempotence", args.no_idempotence,
                "at-least-once: a batch resent after a lost answer may be written twice");
  const CLI::Option* transactional_id = cmd->add_option(
      "--transactional-id", flags->transactional_id, "each --batch records are one transaction of this id");
  cmd->add_option("--transaction-timeout", args.transaction_timeout,
                  "the broker aborts a transaction open longer than this")
      ->capture_default_str();
  cmd->footer(
      "Example:\n  printf 'user1:hello\\nuser2:world\\n' | streamctl produce events --key-separator :");
  when_chosen(
      *cmd, chosen,
      [flags, key, separator, transactional_id](Context& ctx) {
        if (key->count() > 0) flags->args.key = flags->key;
        if (separator->count() > 0) flags->args.key_separator = flags->key_separator;
        if (transactional_id->count() > 0) flags->args.transactional_id = flags->transactional_id;
        if (flags->args.transactional_id && flags->args.no_idempotence) {
          return Status(Error(ErrorCode::kStreamMisconfigured, "a transactional producer is idempotent",
                              {{"field", "no_idempotence"}}));
        }
        return produce_command(ctx, flags->args);
      },
      // Lines from stdin go on until the input ends, riding out a broker restart on the way.
      [flags] { return flags->args.values.empty(); });
}

}  // namespace streamd::streamctl
