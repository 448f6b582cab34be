// ProducerState: what one partition knows of its idempotent and transactional producers, checked where
// the partition assigns offsets, so that a resent batch is written once (docs/SEMANTICS.md §"Idempotent
// producers") and a transaction's records stay apart until it ends (docs/TRANSACTIONS.md).
//
// Per producer id it keeps the epoch and the sequence ranges and offsets of the producer's last five
// batches on the partition. A batch carries its producer's id, epoch and first sequence; its records
// take the sequences first .. first + last_delta (a batch's offset slots), wrapping from 2^31 - 1 to 0.
// Kafka's rules, exactly:
//  - no state for the id (never seen here, expired or evicted): any sequence is taken;
//  - an epoch below the state's: PRODUCER_FENCED (a newer instance of the producer has written);
//  - a newer epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE;
//  - the same epoch: a batch whose sequence range is one of the last five batches' is a duplicate,
//    answered with that batch's offsets and written no more; otherwise it must start right after the
//    last batch's last sequence, else OUT_OF_ORDER_SEQUENCE.
//
// Transactions: a transactional batch opens its producer's transaction on the partition at its first
// offset, and a commit or abort marker (txn_marker.h) ends it; an abort's range is kept so that readers
// can leave its records out. While a transaction is open, the producer's batches outside it and a newer
// epoch's batches are INVALID_TXN_STATE, and so is a marker with no transaction open (a marker is written
// once). A marker with a newer epoch (the coordinator's abort of a timed-out transaction) moves the
// producer to that epoch, whose first batch starts at sequence 0. The earliest open transaction's first
// offset bounds what read_committed readers see (the last stable offset). A producer with a transaction
// open is never expired or evicted.
//
// The writer checks each batch of a group and stages the ones it writes (check, stage); the group's
// outcome then commits what became durable and rolls back the rest, so a batch that was never
// acknowledged leaves no trace, while later batches of the same group already see the earlier ones.
// Readers see transactions as settle() left them: a marker counts once it is durable.
//
// Bounded: entries idle longer than the limits' idle expiry are dropped, and past the limits' broker-wide
// count a partition adding a producer evicts its own least recently used one first (ProducerLimits).
// The state is rebuilt from the batches themselves (they carry the producer fields); snapshot() and
// load() make that a cache (docs/FORMAT.md §"Producer snapshots").
//
// Thread-safety: one writer (check, stage, commit, rollback) at a time; expire() and every reader may
// run on other threads concurrently (an internal mutex; first_open() takes none).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/producer_window.h"
#include "server/storage/aborted_txn.h"
#include "server/storage/record_batch.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// An idempotent producer's identity, as InitProducer hands it out.
struct ProducerIdentity {
  int64_t id = -1;
  int16_t epoch = 0;
  bool operator==(const ProducerIdentity&) const = default;
};

// The same id at the next epoch, which fences the current one wherever it writes; nullopt once the
// epoch is exhausted (the producer needs a new id).
std::optional<ProducerIdentity> next_epoch(const ProducerIdentity& current);

// How many producer states a broker keeps (config limits.max_producers, limits.producer_idle_expiry).
struct ProducerBounds {
  uint64_t max_producers = 100'000;                                   // all partitions together
  std::chrono::microseconds idle_expiry = std::chrono::hours(24 * 7);  // a state unused this long goes
};

// The bounds every partition's ProducerState shares, and the counts /metrics reports.
struct ProducerLimits {
  explicit ProducerLimits(ProducerBounds b = {}) : max_producers(b.max_producers), idle_expiry(b.idle_expiry) {}
  const uint64_t max_producers;
  const std::chrono::microseconds idle_expiry;
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> expirations{0};
};

// A transaction open on a partition: its producer, at the epoch that opened it, and its first offset.
struct OpenTxn {
  ProducerIdentity producer;
  Offset first;
  bool operator==(const OpenTxn&) const = default;
};

// What a batch is to its producer's transaction.
enum class TxnRole : uint8_t {
  kNone,          // not transactional
  kData,          // records of the producer's transaction; the first such batch opens it
  kCommit,        // the marker that commits it
  kAbort,         // the marker that aborts it
  kOtherControl,  // a control batch of another kind, which ends nothing
};

// A batch's producer fields: id -1 for a batch of no idempotent producer.
struct ProducerStamp {
  int64_t id = -1;
  int16_t epoch = -1;
  int32_t first_sequence = -1;
  TxnRole txn = TxnRole::kNone;
  bool idempotent() const { return id >= 0; }
  bool marker() const { return txn == TxnRole::kCommit || txn == TxnRole::kAbort; }
};

// The stamp a stored batch carries (docs/FORMAT.md §"Record batch"; a version 1 batch carries none):
// `h` is the header of `batch`, whose marker record is read when it is a control batch.
ProducerStamp stamp_of(const BatchHeader& h, std::string_view batch);


class ProducerState {
 public:
  static constexpr size_t kBatchesKept = kProducerWindow;

  enum class Verdict {
    kAppend,     // write it
    kDuplicate,  // written before: `original` holds its offsets
    kRefused,    // `refusal` says why (OUT_OF_ORDER_SEQUENCE, PRODUCER_FENCED, INVALID_TXN_STATE)
  };
  struct Check {
    Verdict verdict = Verdict::kAppend;
    AppendRange original;
    Status refusal;
  };

  // `limits` outlives the state; nullptr: unbounded (tests).
  explicit ProducerState(ProducerLimits* limits = nullptr);
  ~ProducerState();
  ProducerState(const ProducerState&) = delete;
  ProducerState& operator=(const ProducerState&) = delete;

  // The verdict on a batch of `stamp` covering last_delta + 1 sequences, against the committed and
  // the staged batches.
  Check check(const ProducerStamp& stamp, uint32_t last_delta) const;
  // Records a batch of an idempotent producer that check() said to append, at `range`, written at `at`
  // (a batch of no producer is not staged). Returns how many batches are staged now.
  size_t stage(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at);
  // The first `n` staged batches became durable: they stay; the rest are undone. Then bounds the state.
  void settle(size_t n, Timestamp now);
  // Drops what has been idle past the expiry (as of `now`); returns how many went.
  size_t expire(Timestamp now);

  // Applies a batch found in the log (recovery), with no check: the log is the truth.
  void replay(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at);

  size_t size() const;
  bool empty() const { return size() == 0; }

  // The first offset of the earliest transaction open on the partition as settled; nullopt when none
  // is. Lock-free: read on every read_committed read.
  std::optional<Offset> first_open() const;
  size_t open_transactions() const;
  // The producers whose transaction is open on the partition, at the epoch that opened it.
  std::vector<ProducerIdentity> open_producers() const;
  // The same with each transaction's first offset, ordered by it.
  std::vector<OpenTxn> open_txns() const;
  // The aborted transactions whose records reach into [from, to), in the order they ended.
  std::vector<AbortedTxn> aborted_between(Offset from, Offset to) const;
  // Forgets the aborted transactions that ended before `start` (retention removed their records).
  void forget_aborted_before(Offset start);

  // The whole state as bytes (docs/FORMAT.md §"Producer snapshots"), as it stands once the batches
  // below `end` are applied; and back: load() replaces the state and returns that `end`, or nullopt
  // (state unchanged) when the bytes are not a whole snapshot.
  std::string snapshot(Offset end) const;
  // The first offset of the earliest transaction open in a snapshot's state; nullopt when none is or
  // the bytes are not a whole snapshot. Spares loading the state to learn it.
  static std::optional<Offset> first_open_of(std::string_view snapshot);
  std::optional<Offset> load(std::string_view bytes);
  // The same for some producers only, and their merge into the state (replacing what it holds of
  // them): an engine that keeps each producer's state apart (the PostgreSQL engine's rows).
  std::string snapshot_of(const std::vector<int64_t>& ids) const;
  bool merge(std::string_view bytes);

 private:
  struct Batch {
    int32_t first_sequence = 0;
    int32_t last_sequence = 0;
    AppendRange range;
  };
  struct Entry {
    int16_t epoch = 0;
    std::optional<Offset> txn_first;  // the open transaction's first offset here
    std::array<Batch, kBatchesKept> batches{};  // a ring: the newest at (head + count - 1) % kBatchesKept
    uint8_t head = 0;
    uint8_t count = 0;
    Timestamp last_used;
    std::list<int64_t>::iterator lru;  // its place in lru_, oldest first
    const Batch& newest() const { return batches[(head + count - 1) % kBatchesKept]; }
    void push(const Batch& b);
  };
  // What a stage changed, to undo it: the entry before (nullopt: there was none), and whether it
  // recorded an aborted transaction.
  struct Undo {
    int64_t id = 0;
    std::optional<Entry> before;
    bool aborted_added = false;
  };

  static int32_t last_sequence(int32_t first, uint32_t last_delta);
  static int32_t next_sequence(int32_t last);
  Check check_marker_locked(const ProducerStamp& stamp) const;
  // Applies a batch; returns whether it recorded an aborted transaction.
  bool apply_locked(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at);
  bool end_txn_locked(const ProducerStamp& stamp, Offset marker);
  // Moves producer `id` in the set of open transactions from `was` to `now`.
  void reopen_locked(int64_t id, const std::optional<Offset>& was, const std::optional<Offset>& now);
  void publish_locked();
  void erase_locked(std::unordered_map<int64_t, Entry>::iterator it);
  void touch_locked(Entry& e, Timestamp at);
  void bound_locked(Timestamp now);
  void append_entry_locked(std::string& out, int64_t id, const Entry& e) const;
  // Parses a snapshot into `end`, its entries (least recently used first) and its aborted
  // transactions; false when not whole.
  static bool parse(std::string_view bytes, Offset& end, std::vector<std::pair<int64_t, Entry>>& entries,
                    std::vector<AbortedTxn>& aborted);
  // Puts parsed entries into the state, most recently used last (caller holds mu_).
  void insert_locked(std::vector<std::pair<int64_t, Entry>>& entries);

  ProducerLimits* const limits_;
  mutable std::mutex mu_;
  std::unordered_map<int64_t, Entry> entries_;
  std::list<int64_t> lru_;  // ids, least recently used first
  std::vector<Undo> staged_;
  std::set<std::pair<uint64_t, int64_t>> open_;  // (first offset, producer id) of every open transaction
  std::vector<AbortedTxn> aborted_;              // in the order they ended: by marker offset
  static constexpr uint64_t kNoneOpen = UINT64_MAX;
  std::atomic<uint64_t> first_open_{kNoneOpen};  // open_'s first offset as of the last settle
};

}  // namespace streamd
