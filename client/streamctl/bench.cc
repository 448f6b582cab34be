#include "client/streamctl/bench.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/append_encoding.h"
#include "client/consumer.h"
#include "client/duration.h"
#include "client/producer.h"
#include "client/streamctl/bench_figures.h"
#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Status;
using Clock = std::chrono::steady_clock;

namespace {

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t index =
      std::min(sorted.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[index];
}

}  // namespace

void print(Context& ctx, Figures& f) {
  std::sort(f.latencies_ms.begin(), f.latencies_ms.end());
  const double rps = f.seconds > 0 ? static_cast<double>(f.records) / f.seconds : 0;
  const double mbps = f.seconds > 0 ? static_cast<double>(f.bytes) / f.seconds / 1e6 : 0;
  const double p50 = percentile(f.latencies_ms, 50), p99 = percentile(f.latencies_ms, 99),
               p999 = percentile(f.latencies_ms, 99.9);
  char buf[512];
  if (f.transactions > 0) {
    const double tps = f.seconds > 0 ? static_cast<double>(f.transactions) / f.seconds : 0;
    if (ctx.json) {
      std::snprintf(buf, sizeof buf,
                    "{\"mode\":\"%s\",\"transactions\":%llu,\"records\":%llu,\"seconds\":%.3f,"
                    "\"transactions_per_s\":%.0f,\"records_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                    "\"p99_9_ms\":%.3f}",
                    f.mode.c_str(), static_cast<unsigned long long>(f.transactions),
                    static_cast<unsigned long long>(f.records), f.seconds, tps, rps, p50, p99, p999);
    } else {
      std::snprintf(buf, sizeof buf,
                    "%s: %llu transactions (%llu records) in %.3f s: %.0f transactions/s, %.0f records/s; "
                    "commit latency p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms",
                    f.mode.c_str(), static_cast<unsigned long long>(f.transactions),
                    static_cast<unsigned long long>(f.records), f.seconds, tps, rps, p50, p99, p999);
    }
    ctx.out << buf << '\n';
    return;
  }
  if (ctx.json) {
    std::snprintf(
        buf, sizeof buf,
        "{\"mode\":\"%s\",\"records\":%llu,\"seconds\":%.3f,\"records_per_s\":%.0f,\"mb_per_s\":%.2f,"
        "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p99_9_ms\":%.3f}",
        f.mode.c_str(), static_cast<unsigned long long>(f.records), f.seconds, rps, mbps, p50, p99, p999);
  } else {
    std::snprintf(buf, sizeof buf,
                  "%s: %llu records in %.3f s: %.0f records/s, %.2f MB/s; latency p50 %.3f ms, p99 %.3f ms, "
                  "p99.9 %.3f ms",
                  f.mode.c_str(), static_cast<unsigned long long>(f.records), f.seconds, rps, mbps, p50, p99,
                  p999);
  }
  ctx.out << buf << '\n';
}

std::string default_stream(const std::string& mode) {
  return "bench-" + mode + "-" + std::to_string(::getpid());
}

Status ensure_stream(Context& ctx, const std::string& name, int32_t partitions) {
  client::Policy policy;
  policy.partitions = partitions;
  auto created = ctx.admin.create_stream(name, policy, true);
  return created.status();
}

namespace {

Status bench_consume(Context& ctx, const BenchArgs& args, Figures* figures) {
  if (args.stream.empty()) {
    return Error(ErrorCode::kStreamMisconfigured, "bench consume reads an existing stream: give --stream",
                 {{"field", "stream"}});
  }
  client::ConsumerOptions options;
  options.max_records = args.max_records;
  options.wait = std::chrono::milliseconds(0);
  options.isolation = args.read_uncommitted ? client::Isolation::kReadUncommitted : client::Isolation::kReadCommitted;
  auto opened = client::Consumer::open(ctx.connection, args.stream, options);
  if (!opened.ok()) return opened.error();
  client::Consumer& consumer = **opened;
  std::map<int32_t, uint64_t> end;
  for (int32_t p : consumer.partitions()) {
    auto bounds = ctx.admin.bounds(args.stream, p);
    if (!bounds.ok()) return bounds.error();
    end[p] = args.read_uncommitted ? bounds->next : bounds->last_stable;
    if (consumer.position(p) >= end[p]) consumer.pause(p);
  }
  const auto started = Clock::now();
  while (true) {
    bool any = false;
    for (int32_t p : consumer.partitions()) any = any || !consumer.is_paused(p);
    if (!any) break;
    const auto asked = Clock::now();
    auto entries = consumer.poll();
    if (!entries.ok()) return entries.error();
    figures->latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
    for (const auto& e : *entries) {
      ++figures->records;
      figures->bytes += e.record.key.size() + e.record.payload.size();
    }
    for (int32_t p : consumer.partitions()) {
      if (consumer.position(p) >= end[p]) consumer.pause(p);
    }
    if (entries->empty() && figures->records == 0 && Clock::now() - started > std::chrono::seconds(5)) break;
  }
  figures->seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return Status();
}

Status bench_e2e(Context& ctx, const BenchArgs& args, Figures* figures) {
  auto duration = client::parse_duration(args.duration);
  if (!duration.ok()) return duration.error();
  if (args.rate <= 0) return Error(ErrorCode::kStreamMisconfigured, {{"field", "rate"}});
  const std::string stream = args.stream.empty() ? default_stream("e2e") : args.stream;
  if (Status s = ensure_stream(ctx, stream, args.partitions); !s.ok()) return s;

  client::ConsumerOptions consumer_options;
  consumer_options.start = client::StartPosition::latest();
  consumer_options.wait = std::chrono::milliseconds(200);
  client::Connection reader_connection(ctx.connection.options());
  auto opened = client::Consumer::open(reader_connection, stream, consumer_options);
  if (!opened.ok()) return opened.error();
  const auto epoch = Clock::now();
  const uint64_t total = static_cast<uint64_t>(args.rate * std::chrono::duration<double>(*duration).count());
  std::atomic<bool> writer_done{false};
  std::optional<Error> failure;
  std::mutex mutex;

  std::thread writer([&] {
    client::Admin admin(ctx.connection);
    const std::string padding(args.record_size > 8 ? args.record_size - 8 : 0, 'x');
    for (uint64_t i = 0; i < total && !ctx.interrupted; ++i) {
      std::this_thread::sleep_until(epoch +
                                    std::chrono::nanoseconds(static_cast<int64_t>(1e9 * i / args.rate)));
      int64_t sent_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count();
      client::Record record;
      record.payload.assign(reinterpret_cast<const char*>(&sent_ns), sizeof sent_ns);
      record.payload += padding;
      auto appended = admin.append(stream, {record});
      if (!appended.ok()) {
        std::lock_guard lock(mutex);
        if (!failure) failure = appended.error();
        break;
      }
    }
    writer_done = true;
  });
  uint64_t received = 0;
  const auto started = Clock::now();
  auto idle_since = Clock::now();
  while (received < total && !ctx.interrupted) {
    auto entries = (*opened)->poll();
    if (!entries.ok()) {
      std::lock_guard lock(mutex);
      if (!failure) failure = entries.error();
      break;
    }
    const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count();
    for (const auto& e : *entries) {
      if (e.record.payload.size() < sizeof(int64_t)) continue;
      int64_t sent_ns;
      std::memcpy(&sent_ns, e.record.payload.data(), sizeof sent_ns);
      figures->latencies_ms.push_back(static_cast<double>(now_ns - sent_ns) / 1e6);
      figures->bytes += e.record.payload.size();
      ++received;
    }
    if (!entries->empty()) idle_since = Clock::now();
    if (writer_done && Clock::now() - idle_since > std::chrono::seconds(2)) break;
  }
  writer.join();
  figures->records = received;
  figures->seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (failure) return *failure;
  return Status();
}

Status bench_command(Context& ctx, const BenchArgs& args) {
  Figures figures;
  figures.mode = args.mode;
  Status status;
  if (args.mode == "produce") {
    status = bench_produce(ctx, args, &figures);
  } else if (args.mode == "txn") {
    status = bench_txn(ctx, args, &figures);
  } else if (args.mode == "consume") {
    status = bench_consume(ctx, args, &figures);
  } else {
    status = bench_e2e(ctx, args, &figures);
  }
  if (!status.ok()) return status;
  print(ctx, figures);
  return Status();
}

}  // namespace

void add_bench_command(CLI::App& app, ChosenCommand& chosen) {
  auto args = std::make_shared<BenchArgs>();
  auto* bench = app.add_subcommand("bench", "measure throughput and latency against the broker");
  bench->require_subcommand(1);
  bench->footer(
      "Examples:\n  streamctl bench produce --records 1000000 --record-size 100 --batch 1000\n"
      "  streamctl bench consume --stream bench-produce-123 --json\n  streamctl bench e2e --rate 2000 "
      "--duration 10s");
  auto common = [&args](CLI::App* sub) {
    sub->add_option("--stream", args->stream, "stream to use (default: a fresh bench-* stream)");
    sub->add_option("--record-size", args->record_size, "payload bytes per record")->capture_default_str();
    sub->add_option("--partitions", args->partitions, "partitions of a stream bench creates")
        ->capture_default_str();
  };
  auto* produce = bench->add_subcommand("produce", "append records as fast as acknowledged");
  common(produce);
  produce->add_option("--records", args->records, "records in all")->capture_default_str();
  produce->add_option("--batch", args->batch, "records per batch")->capture_default_str();
  produce->add_option("--producers", args->producers, "concurrent producers, one connection each")
      ->capture_default_str();
  produce->add_option("--in-flight", args->in_flight, "batches in flight per producer and partition")
      ->capture_default_str();
  produce->add_flag("--keyed", args->keyed, "records carry one of 10000 keys");
  produce->add_flag("--sync", args->sync, "each producer waits for every append's answer before the next");
  produce->add_option("--rate", args->pace,
                      "with --sync: appends per second over all producers, each sending its next at its "
                      "turn (0: as fast as answered)")
      ->capture_default_str();
  produce->add_flag("!--no-idempotence", args->idempotent, "producers do not stamp their batches (at-least-once)");
  produce->callback([args] { args->mode = "produce"; });
  auto* consume = bench->add_subcommand("consume", "read a stream from its start to its end");
  common(consume);
  consume->add_option("--max-records", args->max_records, "records per partition per read")
      ->capture_default_str();
  consume->add_flag("--read-uncommitted", args->read_uncommitted,
                    "read to the end, open and aborted transactions included (default: read_committed)");
  consume->callback([args] { args->mode = "consume"; });
  auto* e2e = bench->add_subcommand("e2e", "latency from append to long-poll delivery at a fixed rate");
  common(e2e);
  e2e->add_option("--rate", args->rate, "appends per second")->capture_default_str();
  e2e->add_option("--duration", args->duration, "how long to append")->capture_default_str();
  e2e->callback([args] { args->mode = "e2e"; });
  auto* txn = bench->add_subcommand(
      "txn", "commit transactions over the partitions of two streams (NAME-a, NAME-b) from P producers");
  common(txn);
  txn->add_option("--records", args->records, "records in all")->capture_default_str();
  txn->add_option("--txn-records", args->txn_records, "records per transaction, alternating the streams")
      ->capture_default_str();
  txn->add_option("--producers", args->producers, "transactional producers, one connection each")
      ->capture_default_str();
  txn->callback([args] { args->mode = "txn"; });
  // A run lasts its record count or duration, riding out a broker restart on the way.
  when_chosen(
      *bench, chosen, [args](Context& ctx) { return bench_command(ctx, *args); }, [] { return true; });
}

}  // namespace streamd::streamctl
