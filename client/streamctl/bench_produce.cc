// `streamctl bench produce`: P producer threads, one connection each, all receiving on one reactor;
// with --sync each runs a closed loop of one append at a time, else the batching Producer.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/admin.h"
#include "client/append_encoding.h"
#include "client/connection.h"
#include "client/partitioner.h"
#include "client/producer.h"
#include "client/streamctl/bench_figures.h"
#include "client/streamctl/commands.h"

namespace streamd::streamctl {

using client::Error;
using client::Status;
using Clock = std::chrono::steady_clock;

namespace {

// One producer thread of `bench produce`: its share of the records, where its latencies go, and how
// it reports a failure.
struct ProducerShare {
  const BenchArgs& args;
  const std::string& stream;
  uint64_t producers;
  uint64_t index;
  uint64_t records;  // this producer's share
  // Where unkeyed idempotent batches go in turn: the partitions the broker's rotation takes
  // (client::StreamDescription::unkeyed_partitions).
  const std::vector<int32_t>& unkeyed;
  std::vector<double>& latencies;
  std::function<void(const Error&)> fail;
  std::string payload = std::string(args.record_size, 'x');

  client::Record record_for(uint64_t i) const {
    client::Record record;
    if (args.keyed) record.key = "key-" + std::to_string((i * producers + index) % 10'000);
    record.payload = payload;
    return record;
  }
};

// --sync: a closed loop, one append outstanding. Each answer's callback sends the next append, pinned
// to the socket the first one went out on (connection.h), so no thread hop sits between them. With
// --rate the producer's own thread sends each append at its turn instead (or at once when the answer
// before came after it): a load of a given rate, so that setups are compared at the same load rather
// than each at what its CPU lets through.
class ClosedLoop {
 public:
  ClosedLoop(client::Connection& connection, ProducerShare& share) : connection_(connection), share_(share) {}

  void run() {
    if (share_.args.idempotent) {
      auto identity = client::Admin(connection_).init_producer();
      if (!identity.ok()) return share_.fail(identity.error());
      identity_ = *identity;
    }
    // The first append, from this thread, connects and names the socket the loop stays on.
    bool first_ok = false;
    send_timed(
        [&](const Status& status) {
          if (!status.ok()) share_.fail(status.error());
          first_ok = status.ok();
          finish(Status());
        },
        0, &socket_);
    wait_finished();
    if (!first_ok) return;
    if (share_.args.pace > 0) return run_paced();
    finished_ = false;
    send_next();
    wait_finished();
  }

 private:
  void finish(const Status& status) {
    if (!status.ok()) share_.fail(status.error());
    std::lock_guard lock(mutex_);
    finished_ = true;
    cv_.notify_one();
  }
  void wait_finished() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return finished_; });
  }
  std::string next_fields() {
    std::string records;
    std::optional<client::AppendStamp> stamp;
    size_t n = 0;
    for (; next_ < share_.records && n < share_.args.batch; ++next_, ++n) {
      const client::Record record = share_.record_for(next_);
      if (identity_ && n == 0) stamp = stamp_for(record);
      client::append_encoded_record(&records, record);
    }
    if (stamp) sequences_[stamp->partition] += static_cast<int64_t>(n);
    return client::encode_append_head(share_.stream, records.size(), stamp) + records;
  }
  // An idempotent batch names its partition: a keyed one the key's, an unkeyed one the next in turn.
  client::AppendStamp stamp_for(const client::Record& first) {
    const int32_t partitions = std::max(share_.args.partitions, 1);
    const int32_t partition = first.key.empty() ? share_.unkeyed[rotation_++ % share_.unkeyed.size()]
                                                : client::partition_of(first.key, partitions);
    constexpr int64_t kSequences = int64_t{1} << 31;
    return {identity_->id, identity_->epoch, static_cast<int32_t>(sequences_[partition] % kSequences), partition, {}};
  }
  // Sends the next append and times it; `then` gets its outcome once its latency is recorded.
  void send_timed(std::function<void(const Status&)> then, uint64_t pin, uint64_t* sent_on) {
    const std::string fields = next_fields();
    const std::string_view piece = fields;
    sent_ = Clock::now();
    connection_.call_async_encoded(
        {&piece, 1}, {},
        [this, then = std::move(then)](const Status& status, v1::Response&) {
          share_.latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent_).count());
          then(status);
        },
        pin, sent_on);
  }
  void run_paced() {
    // Producer `index` of P takes every P-th turn of the whole load's, offset by its index; the first
    // append, answered just now, was its turn 0.
    const std::chrono::duration<double> interval(static_cast<double>(share_.producers) / share_.args.pace);
    const auto turn = [&](double k) { return std::chrono::duration_cast<Clock::duration>(interval * k); };
    const auto start = Clock::now() + turn(static_cast<double>(share_.index) / static_cast<double>(share_.producers));
    for (uint64_t k = 1; next_ < share_.records; ++k) {
      std::this_thread::sleep_until(start + turn(static_cast<double>(k)));
      Status outcome;
      {
        std::lock_guard lock(mutex_);
        finished_ = false;
      }
      send_timed(
          [&](const Status& status) {
            outcome = status;
            finish(Status());
          },
          socket_, nullptr);
      wait_finished();
      if (!outcome.ok()) return share_.fail(outcome.error());
    }
  }
  void send_next() {
    if (next_ >= share_.records) return finish(Status());
    send_timed(
        [this](const Status& status) {
          if (!status.ok()) return finish(status);
          send_next();
        },
        socket_, nullptr);
  }

  client::Connection& connection_;
  ProducerShare& share_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool finished_ = false;
  uint64_t next_ = 0;
  uint64_t socket_ = 0;
  Clock::time_point sent_;
  std::optional<client::ProducerIdentity> identity_;  // idempotence
  std::map<int32_t, int64_t> sequences_;              // per partition: records sent under identity_
  uint64_t rotation_ = 0;
};

// Without --sync: the batching Producer, as many appends in flight as --in-flight allows.
void produce_pipelined(client::Connection& connection, ProducerShare& share) {
  const BenchArgs& args = share.args;
  client::ProducerOptions options;
  options.batch_records = args.batch;
  options.batch_bytes = std::max<size_t>(args.batch * (args.record_size + 16), 1 << 20);
  options.max_in_flight = args.in_flight;
  options.linger = std::chrono::milliseconds(args.batch > 1 ? 5 : 0);
  options.idempotent = args.idempotent;  // the producer asks the broker which partitions it takes
  // Room for one window more than is in flight: latency stays the pipeline's, not a queue's.
  const size_t lanes = args.keyed ? static_cast<size_t>(std::max(args.partitions, 1)) : 1;
  options.max_buffered_bytes =
      static_cast<size_t>(args.in_flight + 1) * lanes * args.batch * (args.record_size + 16);
  auto producer = client::Producer::open(connection, share.stream, options);
  if (!producer.ok()) return share.fail(producer.error());
  // One record per batch-sized run is timed: a clock read and a callback per record would cost the
  // producer more than it costs the library.
  auto& lat = share.latencies;
  lat.resize((share.records + args.batch - 1) / args.batch);
  for (uint64_t i = 0; i < share.records; ++i) {
    if (i % args.batch != 0) {
      (*producer)->send(share.record_for(i));
      continue;
    }
    const auto sent = Clock::now();
    (*producer)->send(share.record_for(i),
                      [&lat, i, sent, batch = args.batch](const client::Result<client::Delivery>&) {
                        lat[i / batch] = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
                      });
  }
  (*producer)->flush();
  if (auto error = (*producer)->last_error()) share.fail(*error);
}

}  // namespace

Status bench_produce(Context& ctx, const BenchArgs& args, Figures* figures) {
  if (args.pace < 0 || (args.pace > 0 && !args.sync)) {
    return Error(client::ErrorCode::kStreamMisconfigured, "--rate paces the appends of --sync, at more than 0 a second",
                 {{"field", "rate"}});
  }
  const std::string stream = args.stream.empty() ? default_stream("produce") : args.stream;
  if (Status s = ensure_stream(ctx, stream, args.partitions); !s.ok()) return s;
  auto description = ctx.admin.describe_stream(stream);
  if (!description.ok()) return description.error();
  const std::vector<int32_t> unkeyed = description->unkeyed_partitions();
  const auto producers = static_cast<uint64_t>(std::max(args.producers, 1));
  std::mutex mutex;
  std::optional<Error> failure;
  auto fail = [&](const Error& error) {
    std::lock_guard lock(mutex);
    if (!failure) failure = error;
  };
  std::vector<std::vector<double>> latencies(producers);
  std::vector<std::thread> threads;
  // Every producer's connection receives on one reactor thread, as an event-driven client would.
  client::ConnectionOptions connection_options = ctx.connection.options();
  connection_options.reactor = std::make_shared<client::Reactor>();
  const auto started = Clock::now();
  for (uint64_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      client::Connection connection(connection_options);
      const uint64_t records = args.records / producers + (p < args.records % producers ? 1 : 0);
      ProducerShare share{args, stream, producers, p, records, unkeyed, latencies[p], fail};
      if (args.sync) {
        ClosedLoop(connection, share).run();
      } else {
        produce_pipelined(connection, share);
      }
    });
  }
  for (auto& t : threads) t.join();
  figures->seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (failure) return *failure;
  figures->records = args.records;
  figures->bytes = args.records * args.record_size;
  for (auto& lat : latencies) figures->latencies_ms.insert(figures->latencies_ms.end(), lat.begin(), lat.end());
  return Status();
}

}  // namespace streamd::streamctl
