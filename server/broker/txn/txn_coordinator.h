// TxnCoordinator: Kafka's transaction coordinator, for every transactional id of one broker
// (docs/TRANSACTIONS.md §"The coordinator"). Its state is a TxnLog; what it does to partitions and
// groups goes through TxnEffects, which the broker implements (and tests fake).
//
// The rules, Kafka's (TransactionCoordinator):
//  - init_producer gives an id its producer: a new producer id the first time, else the next epoch,
//    which fences the previous instance. A transaction the id left open is aborted first, with an
//    epoch bump; one decided but not finished is finished first.
//  - add_partitions and add_group begin a transaction (Ongoing) or add to it; stage_offsets stages a
//    group's offsets in it (the group added first). Each is durable before it is answered, but for a
//    native producer's add_partitions on files, which is durable before the decision (TxnLog::join).
//  - end decides (PrepareCommit or PrepareAbort, durable before any marker), writes a marker to every
//    partition of the transaction, commits the staged offsets on commit, and records the end
//    (CompleteCommit, CompleteAbort) before it answers (on files without waiting for it, TxnLog::end). Where the log's store writes all of that in one
//    database transaction (TxnLog::writes_ends), it does: the end record, every marker and every offset
//    commit together or not at all. Asked again with the same decision once the
//    transaction ended, it answers OK; while the id is being ended, CONCURRENT_TRANSACTIONS; a decided
//    transaction whose completion failed is completed again by the next end() of that decision.
//  - A producer id that is not the id's is INVALID_PRODUCER_ID_MAPPING, an older epoch PRODUCER_FENCED,
//    a request that does not fit the state INVALID_TXN_STATE.
//  - expire() aborts, with an epoch bump, every Ongoing transaction past its timeout, and forgets every
//    id with none open that was idle past limits.transactional_id_expiry (Kafka's
//    transactional.id.expiration.ms); abort() does the first to one id at an operator's word; recover()
//    finishes every decided transaction after a restart.
//  - A new id past limits.max_transactional_ids is TOO_MANY_TRANSACTIONAL_IDS: the ids' state is memory.
//
// Thread-safety: every method may be called from any thread; answers run on the threads of the log and
// the effects. One request that changes an id's transaction runs at a time; appends go on beside one
// that adds to it (librdkafka adds partitions while it produces to others), never beside one that ends it.
// A request that adds to the transaction waits its turn behind another that adds (a native producer's
// first batches to several partitions arrive together); one that meets an end under way, or any
// request that meets another, is CONCURRENT_TRANSACTIONS.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/storage/clock.h"
#include "server/storage/producer_state.h"
#include "server/storage/status.h"
#include "server/storage/txn_log.h"

namespace streamd {

// What the coordinator does outside its own state.
class TxnEffects {
 public:
  virtual ~TxnEffects() = default;
  // A new producer id (current: nullopt), or `current`'s next epoch (Broker::init_producer).
  virtual Result<ProducerIdentity> new_producer(std::optional<ProducerIdentity> current) = 0;
  // Writes producer `p`'s commit or abort marker to `at`. OK also when the partition holds no open
  // transaction of `p` (its marker was written before) or no longer exists.
  virtual void write_marker(const TxnPartition& at, ProducerIdentity p, bool commit,
                            std::function<void(Status)> done) = 0;
  virtual void commit_offset(const TxnOffset& offset, std::function<void(Status)> done) = 0;
};

// Transactions decided since start, by who decided (for /metrics).
struct TxnCounts {
  std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> aborts{0};  // by the producer, or by a new instance of its id
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> operator_aborts{0};
  std::atomic<uint64_t> expired_ids{0};  // ids forgotten after limits.transactional_id_expiry idle
};

// The transactions open or being ended, and how long the oldest has been (0 when none is).
struct TxnOpenSummary {
  size_t open = 0;
  std::chrono::microseconds oldest{0};
};

struct TxnLimits {
  std::chrono::milliseconds max_timeout = std::chrono::minutes(15);  // limits.max_transaction_timeout
  size_t max_ids = 100000;                                            // limits.max_transactional_ids
  std::chrono::milliseconds id_expiry = std::chrono::hours(24 * 7);  // limits.transactional_id_expiry
};

class TxnCoordinator {
 public:
  using Done = std::function<void(Status)>;
  using ProducerDone = std::function<void(Result<ProducerIdentity>)>;

  TxnCoordinator(TxnLog& log, TxnEffects& effects, const Clock& clock, TxnLimits limits = {});

  void init_producer(const std::string& id, int32_t timeout_ms, std::optional<ProducerIdentity> current,
                     ProducerDone done);
  // `answer`: when a join on files is answered (TxnLog::join); Kafka's AddPartitionsToTxn waits for it
  // to be durable.
  void add_partitions(const std::string& id, ProducerIdentity p, std::vector<TxnPartition> partitions,
                      Done done, JoinAnswer answer = JoinAnswer::kAtOnce);
  void add_group(const std::string& id, ProducerIdentity p, std::string group, Done done);
  void stage_offsets(const std::string& id, ProducerIdentity p, const std::string& group,
                     std::vector<TxnOffset> offsets, Done done);
  void end(const std::string& id, ProducerIdentity p, bool commit, Done done);

  // Whether `p` may append transactionally to `at` now: `at` is in the Ongoing transaction of exactly
  // that producer id and epoch. On OK the append counts as under way until end_produce(): the
  // transaction is not ended meanwhile (CONCURRENT_TRANSACTIONS), or the append could land after its
  // marker and open a transaction on the partition that nothing would end.
  Status begin_produce(const std::string& id, ProducerIdentity p, const TxnPartition& at);
  void end_produce(const std::string& id);
  // Whether `at` is in the Ongoing transaction of exactly `p` now.
  bool holds(const std::string& id, ProducerIdentity p, const TxnPartition& at) const;
  // Aborts, with an epoch bump, every Ongoing transaction begun longer than its timeout before `now`,
  // and forgets the ids idle past their expiry. `done` runs once all are done, with the first failure or
  // OK.
  void expire(Timestamp now, Done done);
  // Finishes every transaction a restart found decided.
  void recover(Done done);
  // Takes `at`, which a restart found holding an open transaction of `p`, into the transaction of the
  // id that holds exactly `p` — beginning it if the id shows none open: the crash took the join, which
  // was answered before it was durable (TxnLog::join), while the partition kept the batch. False, and
  // `done` not called, when no id holds exactly `p` or its transaction is decided (the partition's
  // transaction is then no id's, and aborted).
  bool adopt(const TxnPartition& at, ProducerIdentity p, Done done);
  // An operator's end of the id's transaction: an Ongoing one is aborted with an epoch bump, which
  // fences its producer; a decided one is finished as decided. TRANSACTIONAL_ID_NOT_FOUND for an id
  // the coordinator does not hold, INVALID_TXN_STATE when it has no transaction open.
  void abort(const std::string& id, Done done);

  const TxnCounts& counts() const { return counts_; }
  TxnOpenSummary open_summary() const;
  size_t ids() const { return log_.size(); }
  const TxnLimits& limits() const { return limits_; }
  // What the coordinator holds of every id (ordered by id), or of one.
  std::vector<TxnEntry> list() const { return log_.list(); }
  std::optional<TxnEntry> find(const std::string& id) const { return log_.find(id); }

 private:
  // Claims `id` for a request that changes its transaction; false when one runs. One that may end the
  // transaction (`ending`) also waits for no append to be under way, and holds appends off.
  bool claim(const std::string& id, bool ending);
  // Releases the claim, and runs the next request that waits its turn for the id, if any.
  void release(const std::string& id);
  // True when `retry` was queued behind a request adding to the id's transaction: it runs at that one's
  // release. False when the caller goes on now (and claims, or meets CONCURRENT_TRANSACTIONS).
  bool wait_turn(const std::string& id, std::function<void()> retry);
  // The id's entry for `p`'s request, claimed (see claim()): `done` then releases the claim when it runs.
  Result<TxnEntry> start(const std::string& id, ProducerIdentity p, bool ending, Done& done);
  // Adds to `e`'s transaction (beginning it when none is open) with `write`, unless `known` already.
  void add(const TxnEntry& e, bool known, std::function<void(Done)> write, Done done);
  // Refuses what `p` may not do to `e`: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED.
  static Status check_producer(const TxnEntry& e, ProducerIdentity p);
  Result<TxnEntry> entry_for(const std::string& id, ProducerIdentity p) const;
  // Records `e` as decided at `epoch` (a bump fences its producer), counts the decision in `count`
  // and completes it. The id is claimed by the caller and released here.
  void decide(TxnEntry e, bool commit, int16_t epoch, std::atomic<uint64_t>& count, Done done);
  // Writes the markers and offsets of decided `e` and records its end.
  void complete(const TxnEntry& e, Done done);
  // `h` with its transaction begun now.
  TxnHeader begun(const TxnHeader& h) const;
  // Makes `e`'s transaction Ongoing (durably) when it is not, then runs `then`.
  void begin(const TxnEntry& e, Done then);
  // Aborts `e`'s Ongoing transaction with an epoch bump, counted in `count` (the id is claimed ending;
  // released here).
  void abort_with_bump(const TxnEntry& e, std::atomic<uint64_t>& count, Done done);
  // The id's producer after `e`: the next epoch, or a new producer id when the epoch is spent.
  void next_producer(const TxnEntry& e, int32_t timeout_ms, ProducerDone done);

  TxnLog& log_;
  TxnEffects& effects_;
  const Clock& clock_;
  const TxnLimits limits_;

  mutable std::mutex mu_;
  std::map<std::string, bool> busy_;      // ids whose transaction a request is changing: ending it?
  std::map<std::string, int> producing_;  // transactional appends under way, per id
  std::map<std::string, std::deque<std::function<void()>>> waiting_;  // adds queued per id (wait_turn)
  TxnCounts counts_;
};

}  // namespace streamd
