// The broker's side of transactions (docs/TRANSACTIONS.md): the coordinator over the engine's TxnLog,
// its effects on the broker's streams, its timeout check, and the transactional append.
#include <spdlog/spdlog.h>

#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"
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

void Broker::Impl::open_transactions(Executor& maintenance) {
  TxnLog* log = engine->transactions();
  if (log == nullptr) return;
  txn_effects = std::make_unique<BrokerTxnEffects>(*engine, *catalog);
  txns = std::make_unique<TxnCoordinator>(*log, *txn_effects, clock, options.transactions);
  txns->recover([](Status s) {
    if (!s.ok())
      spdlog::error("transactions: completing the transactions decided before the restart: {}",
                    s.to_string());
  });
  if (options.transaction_check_period.count() <= 0) return;
  TxnCoordinator* coordinator = txns.get();
  const Clock* now = &clock;
  txn_task = std::make_unique<PeriodicTask>(
      scheduler, maintenance, options.transaction_check_period, [coordinator, now] {
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

void Broker::append_transactional(const std::string& transactional_id, ProducerIdentity producer,
                                  const std::string& stream, PartitionId partition, bool enforce_placement,
                                  const std::vector<RecordInput>& records, std::string batch,
                                  std::function<void(Result<AppendResult>)> done) {
  if (!impl_->txns) {
    return done(Status(Code::kInvalidTxnState, "This broker's engine takes no transactions",
                       {{"engine", impl_->engine->kind()}, {"transactional_id", transactional_id}}));
  }
  TxnCoordinator* txns = impl_->txns.get();
  if (Status s = txns->begin_produce(transactional_id, producer, {stream, partition.value}); !s.ok()) {
    return done(std::move(s));
  }
  append_batch_to_partition(stream, partition, enforce_placement, records, std::move(batch),
                            [txns, transactional_id, done = std::move(done)](Result<AppendResult> r) {
                              txns->end_produce(transactional_id);
                              done(std::move(r));
                            });
}

}  // namespace streamd
