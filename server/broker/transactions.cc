// The broker's side of transactions (docs/TRANSACTIONS.md): the coordinator over the engine's TxnLog,
// its effects on the broker's streams, its timeout check, and the transactional appends (Kafka's and
// the native protocol's).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>

#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"
#include "server/broker/routing.h"
#include "server/storage/batch_builder.h"
#include "server/storage/txn_marker.h"

namespace streamd {
namespace {

// Markers and offsets go straight to the engine's partitions and streams: a marker is never held back
// by backpressure, or a full stream could never commit or abort, and its last stable offset would hang.
class BrokerTxnEffects final : public TxnEffects {
 public:
  BrokerTxnEffects(StreamEngine& engine, StreamCatalog& catalog) : engine_(engine), catalog_(catalog) {}

  Result<ProducerIdentity> new_producer(std::optional<ProducerIdentity> current) override {
    return engine_.init_producer(current);
  }

  void write_marker(const TxnPartition& at, ProducerIdentity p, bool commit,
                    std::function<void(Status)> done) override {
    auto opened = catalog_.find(at.stream);
    // A stream deleted since holds no transaction any more.
    if (!opened.ok())
      return done(opened.status().code() == Code::kStreamNotFound ? Status() : opened.status());
    EnginePartition* log = (*opened)->stream->partition(PartitionId(at.partition));
    if (log == nullptr) return done(Status());
    log->append(build_txn_marker(p.id, p.epoch, commit ? MarkerType::kCommit : MarkerType::kAbort, 0),
                [done = std::move(done), at](Result<AppendRange> r) {
                  // A partition whose transaction of `p` is no longer open has its marker already.
                  if (r.ok() || r.status().code() == Code::kInvalidTxnState) return done(Status());
                  done(with_place(r.status(), at.stream, PartitionId(at.partition)));
                });
  }

  void commit_offset(const TxnOffset& o, std::function<void(Status)> done) override {
    auto opened = catalog_.find(o.at.stream);
    if (!opened.ok())
      return done(opened.status().code() == Code::kStreamNotFound ? Status() : opened.status());
    (*opened)->stream->commit(o.group, PartitionId(o.at.partition), o.next, o.metadata, std::move(done));
  }

 private:
  StreamEngine& engine_;
  StreamCatalog& catalog_;
};

}  // namespace

namespace {

// Runs `op` and waits for its `done`.
Status wait_for(const std::function<void(std::function<void(Status)>)>& op) {
  std::promise<Status> done;
  op([&done](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

}  // namespace

void Broker::Impl::abort_unknown_transactions() {
  // The coordinator's view after its recovery: which producer holds which partition in an open
  // transaction. Listed after the partitions, so that nothing it knows can be missing from it.
  std::vector<std::pair<TxnPartition, ProducerIdentity>> open;
  for (const std::shared_ptr<OpenStream>& s : catalog->all()) {
    for (int32_t p = 0; p < s->stream->partition_count(); ++p) {
      auto producers = s->stream->partition(PartitionId(p))->open_producers();
      if (!producers.ok()) {
        spdlog::error("transactions: the open transactions of {}/{}: {}", s->name(), p, producers.status().to_string());
        continue;
      }
      for (const ProducerIdentity& producer : *producers) open.push_back({{s->name(), p}, producer});
    }
  }
  if (open.empty()) return;
  // Other brokers sharing the engine's storage may have begun transactions since it was opened: what
  // it keeps now is read, or nothing is aborted.
  if (Status s = engine->transactions()->refresh(); !s.ok()) {
    spdlog::error("transactions: reading the coordinator's state: {}; open transactions left as they are",
                  s.to_string());
    return;
  }
  const std::vector<TxnEntry> entries = txns->list();
  for (const auto& held : open) {
    const TxnPartition& at = held.first;
    const ProducerIdentity& producer = held.second;
    const bool known = std::any_of(entries.begin(), entries.end(), [&](const TxnEntry& e) {
      return e.header.producer_id == producer.id && txn_active(e.header.status) && e.partitions.contains(at);
    });
    if (known) continue;
    std::promise<Status> adopted;
    if (txns->adopt(at, producer, [&adopted](Status s) { adopted.set_value(std::move(s)); })) {
      const Status s = adopted.get_future().get();
      if (s.ok()) {
        spdlog::info("transactions: {}/{} holds a transaction of producer {} (epoch {}) whose join the restart "
                     "lost; it is the producer's open transaction again",
                     at.stream, at.partition, producer.id, producer.epoch);
        continue;
      }
      spdlog::error("transactions: taking {}/{} into the transaction of producer {} again: {}; aborting it",
                    at.stream, at.partition, producer.id, s.to_string());
    }
    Status aborted = wait_for([&](std::function<void(Status)> done) {
      txn_effects->write_marker(at, producer, /*commit=*/false, std::move(done));
    });
    if (aborted.ok()) {
      spdlog::warn("transactions: {}/{} held a transaction of producer {} (epoch {}) that no transactional id "
                   "holds; aborted it",
                   at.stream, at.partition, producer.id, producer.epoch);
    } else {
      spdlog::error("transactions: aborting the unknown transaction of producer {} on {}/{}: {}", producer.id,
                    at.stream, at.partition, aborted.to_string());
    }
  }
}

void Broker::Impl::open_transactions(Executor& maintenance) {
  TxnLog* log = engine->transactions();
  if (log == nullptr) return;
  txn_effects = std::make_unique<BrokerTxnEffects>(*engine, *catalog);
  txns = std::make_unique<TxnCoordinator>(*log, *txn_effects, clock, options.transactions);
  txn_joins = std::make_unique<PartitionJoins>(*txns);
  // Before any client is served: what was decided is finished, then what no id knows is aborted.
  if (Status s = wait_for([&](std::function<void(Status)> done) { txns->recover(std::move(done)); }); !s.ok()) {
    spdlog::error("transactions: completing the transactions decided before the restart: {}", s.to_string());
  }
  abort_unknown_transactions();
  if (options.transaction_check_period.count() <= 0) return;
  TxnCoordinator* coordinator = txns.get();
  const Clock* now = &clock;
  txn_task = std::make_unique<PeriodicTask>(
      scheduler, maintenance, options.transaction_check_period, [coordinator, log, now] {
        // What other brokers of a shared storage changed, so that the transactions of one that died
        // time out here.
        if (Status s = log->refresh(); !s.ok()) {
          spdlog::error("transactions: reading the coordinator's state: {}", s.to_string());
          return;
        }
        coordinator->expire(now->now(), [](Status s) {
          if (!s.ok()) {
            spdlog::error("transactions: aborting timed-out transactions: {}", s.to_string());
          }
        });
      });
  txn_task->start();
}

TxnCoordinator* Broker::transactions() const {
  return impl_->txns.get();
}

namespace {

Status no_transactions(const StreamEngine& engine, const std::string& transactional_id) {
  return Status(Code::kInvalidTxnState, "This broker's engine takes no transactions",
                {{"engine", engine.kind()}, {"transactional_id", transactional_id}});
}

// Runs `write` as one transactional append of `producer` to `at` (TxnCoordinator::begin_produce):
// refused unless `at` is in the producer's open transaction, and counted as under way until it is done.
void produce_in(TxnCoordinator& txns, const std::string& transactional_id, ProducerIdentity producer,
                const TxnPartition& at, const std::function<void(std::function<void(Result<AppendResult>)>)>& write,
                std::function<void(Result<AppendResult>)> done) {
  if (Status s = txns.begin_produce(transactional_id, producer, at); !s.ok()) return done(std::move(s));
  write([&txns, transactional_id, done = std::move(done)](Result<AppendResult> r) {
    txns.end_produce(transactional_id);
    done(std::move(r));
  });
}

}  // namespace

void Broker::append_transactional(const std::string& transactional_id, ProducerIdentity producer,
                                  const std::string& stream, PartitionId partition, bool enforce_placement,
                                  const std::vector<RecordInput>& records, std::string batch,
                                  std::function<void(Result<AppendResult>)> done) {
  if (!impl_->txns) return done(no_transactions(*impl_->engine, transactional_id));
  produce_in(
      *impl_->txns, transactional_id, producer, {stream, partition.value},
      [&](std::function<void(Result<AppendResult>)> written) {
        append_batch_to_partition(stream, partition, enforce_placement, records, std::move(batch), std::move(written));
      },
      std::move(done));
}

void Broker::append_in_transaction(const std::string& transactional_id, const std::string& stream,
                                   const std::vector<RecordInput>& records, const AppendOptions& options,
                                   std::function<void(Result<AppendResult>)> done) {
  if (!impl_->txns) return done(no_transactions(*impl_->engine, transactional_id));
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  const EngineStream& s = *(*opened)->stream;
  const PartitionId partition = *options.partition;
  if (Status placed = check_placed_batch(s.name(), records, partition, s.partition_count(),
                                         s.policy().max_record_bytes, /*enforce_placement=*/true);
      !placed.ok()) {
    return done(std::move(placed));
  }
  // Encoded now: the records are views into a request that may be gone once this returns.
  BatchOptions batch_options;
  batch_options.transactional = true;
  batch_options.producer = options.producer;
  BatchBuilder builder(batch_options);
  for (const RecordInput& r : records) builder.add(r.key, r.payload, r.headers);
  auto batch = std::make_shared<std::string>(std::move(builder).finish());
  const ProducerIdentity producer{options.producer.id, options.producer.epoch};
  const TxnPartition at{stream, partition.value};
  TxnCoordinator& txns = *impl_->txns;
  impl_->txn_joins->submit(
      transactional_id, producer, at,
      [impl = impl_.get(), &txns, transactional_id, producer, at, opened = *opened, partition, batch,
       done = std::move(done)](Status joined) mutable {
        if (!joined.ok()) return done(std::move(joined));
        produce_in(
            txns, transactional_id, producer, at,
            [&](std::function<void(Result<AppendResult>)> written) {
              impl->write_encoded(opened, partition, std::move(*batch), std::move(written));
            },
            std::move(done));
      });
}

}  // namespace streamd
