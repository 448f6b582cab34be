// `streamctl bench txn` (X1 in bench/run-all): P transactional producers, one connection each, every
// one committing transactions of --txn-records records spread over the partitions of two streams, one
// after another. It reports committed transactions/s beside records/s, and the latency of a whole
// transaction, from its first send to its commit's answer.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "client/connection.h"
#include "client/partitioner.h"
#include "client/reactor.h"
#include "client/streamctl/bench_figures.h"
#include "client/streamctl/commands.h"
#include "client/transactional_producer.h"

namespace streamd::streamctl {

using client::Error;
using client::Status;
using Clock = std::chrono::steady_clock;

namespace {

// A key per partition of a stream of `partitions`, so that a transaction's records can be placed on
// every partition in turn.
std::vector<std::string> key_per_partition(int32_t partitions) {
  std::vector<std::string> keys(static_cast<size_t>(partitions));
  int found = 0;
  for (int i = 0; found < partitions; ++i) {
    const std::string key = "k" + std::to_string(i);
    std::string& slot = keys[static_cast<size_t>(placement::partition_of(key, partitions))];
    if (slot.empty()) {
      slot = key;
      ++found;
    }
  }
  return keys;
}

}  // namespace

Status bench_txn(Context& ctx, const BenchArgs& args, Figures* figures) {
  const std::string base = args.stream.empty() ? default_stream("txn") : args.stream;
  const std::vector<std::string> streams{base + "-a", base + "-b"};
  for (const std::string& s : streams) {
    if (Status status = ensure_stream(ctx, s, args.partitions); !status.ok()) return status;
  }
  const std::vector<std::string> keys = key_per_partition(args.partitions);
  const auto producers = static_cast<uint64_t>(std::max(args.producers, 1));
  const uint64_t per_txn = std::max<uint64_t>(args.txn_records, 1);
  const uint64_t transactions = std::max<uint64_t>(args.records / per_txn, 1);
  std::mutex mutex;
  std::optional<Error> failure;
  std::vector<std::vector<double>> latencies(producers);
  client::ConnectionOptions connection_options = ctx.connection.options();
  connection_options.reactor = std::make_shared<client::Reactor>();
  const std::string payload(args.record_size, 'x');
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  for (uint64_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      auto fail = [&](const Error& e) {
        std::lock_guard lock(mutex);
        if (!failure) failure = e;
      };
      client::Connection connection(connection_options);
      // The client's defaults: a transaction's records to one partition go out as one batch, when
      // commit() flushes them or once they lingered.
      client::TransactionOptions options;
      auto txn = client::TransactionalProducer::open(
          connection, base + "-" + std::to_string(::getpid()) + "-" + std::to_string(p), options);
      if (!txn.ok()) return fail(txn.error());
      const uint64_t mine = transactions / producers + (p < transactions % producers ? 1 : 0);
      for (uint64_t t = 0; t < mine; ++t) {
        const auto begun = Clock::now();
        // Record i goes to stream i % 2, on its partitions in turn.
        for (uint64_t i = 0; i < per_txn; ++i) {
          (*txn)->send(streams[i % 2], client::Record{keys[(i / 2) % keys.size()], payload, {}});
        }
        if (Status s = (*txn)->commit(); !s.ok()) return fail(s.error());
        latencies[p].push_back(std::chrono::duration<double, std::milli>(Clock::now() - begun).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  figures->seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (failure) return *failure;
  figures->transactions = transactions;
  figures->records = transactions * per_txn;
  figures->bytes = figures->records * args.record_size;
  for (auto& lat : latencies) figures->latencies_ms.insert(figures->latencies_ms.end(), lat.begin(), lat.end());
  return Status();
}

}  // namespace streamd::streamctl
