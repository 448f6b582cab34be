// TxnLog: the transaction coordinator's durable state (docs/TRANSACTIONS.md §"The coordinator"), one
// RecordLog (record_log.h) in <data_dir>/TRANSACTIONS (byte layout: docs/FORMAT.md §"Transactions log").
//
// Per transactional id it keeps the producer id and epoch the id holds, its transaction timeout, the
// state of its current transaction and when that began, and while the transaction is open or being
// ended, the partitions it wrote to, the groups it commits for and the offsets it staged. Each change is
// durable before its `done` runs and before find() and list() show it, so the coordinator answers only
// what a crash keeps — a decision before any marker — with two exceptions on files, join() and end(),
// which are shown and answered at once and made durable by the writes queued behind them
// (docs/TRANSACTIONS.md §"What waits for a sync"): the records of a log are durable in the order they
// were appended, so a decision that is durable has every partition joined before it; what a crash
// takes of a join, the partitions themselves still hold (the restart adopts it, TxnCoordinator::adopt),
// and what it takes of an end, the restart completes again from the decision. If such a change fails
// to be written, the log refuses every later change until it is opened again: what it shows is no
// longer what the file holds.
//
// The memory engine keeps the same state without a file (in_memory()): each change applies at once.
// The PostgreSQL engine keeps it in a TxnStore (over()): each id's live records in a row of their own
// that every broker of the database reads and writes, each write a compare-and-set on the id's
// version, so that a broker whose view of an id is stale changes nothing (CONCURRENT_TRANSACTIONS, its
// view taken again) and the client's retry meets the state another broker left.
//
// Thread-safety: every method may be called from any thread; `done` runs on a storage thread, or at once
// in memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/record_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

namespace txn_log_format {
inline constexpr RecordLogFormat kFormat{{'S', 'D', 'T', 'X'}, 1,       "TRANSACTIONS",
                                         "TRANSACTIONS.tmp",   1 << 20, "transactions log"};
// Record types; 0 is never valid, so zero-filled space never parses.
inline constexpr uint8_t kHeaderType = 1;      // the id's producer, timeout and transaction state
inline constexpr uint8_t kPartitionsType = 2;  // partitions added to the open transaction
inline constexpr uint8_t kGroupType = 3;       // a group whose offsets the transaction commits
inline constexpr uint8_t kOffsetType = 4;      // an offset staged in the transaction
inline constexpr uint8_t kForgetType = 5;      // the id is forgotten (expired)
}  // namespace txn_log_format

// When a join (TxnLog::join) is answered on files. At once for a native producer's, whose batch
// comes in the same request: a crash that takes the join before the batch is durable takes the batch's
// acknowledgement too, and one that keeps the batch lets the restart adopt the partition. Once durable
// for Kafka's AddPartitionsToTxn, which a client follows with its produce only after the answer,
// perhaps to a broker restarted meanwhile: a join lost then would refuse that produce
// (INVALID_TXN_STATE) and leave the client's sequences out of step, which librdkafka takes as fatal.
enum class JoinAnswer : uint8_t { kAtOnce, kWhenDurable };

// Kafka's transaction states, as the coordinator keeps them.
enum class TxnStatus : uint8_t {
  kEmpty = 1,          // an id with a producer and no transaction yet
  kOngoing = 2,        // begun by its first added partition or group
  kPrepareCommit = 3,  // decided: the markers and offsets are being written
  kPrepareAbort = 4,
  kCompleteCommit = 5,  // ended; the next transaction may begin
  kCompleteAbort = 6,
};
const char* txn_status_name(TxnStatus s);
// Whether a transaction in `s` holds partitions and offsets (open or being ended).
inline bool txn_active(TxnStatus s) {
  return s == TxnStatus::kOngoing || s == TxnStatus::kPrepareCommit || s == TxnStatus::kPrepareAbort;
}

struct TxnPartition {
  std::string stream;
  int32_t partition = 0;
  auto operator<=>(const TxnPartition&) const = default;
};

struct TxnOffset {
  std::string group;
  TxnPartition at;
  Offset next;
  std::string metadata;
  bool operator==(const TxnOffset&) const = default;
};

// What the header record says of a transactional id.
struct TxnHeader {
  std::string id;
  int64_t producer_id = -1;
  int16_t epoch = 0;
  int32_t timeout_ms = 0;
  TxnStatus status = TxnStatus::kEmpty;
  // When the current transaction began (its timeout counts from here); with none open, when the last
  // one began or the producer was last initialised, whichever came later (the id's idle expiry counts
  // from here).
  Timestamp started_at;
  bool operator==(const TxnHeader&) const = default;
};

struct TxnEntry {
  TxnHeader header;
  // While txn_active(header.status):
  std::set<TxnPartition> partitions;
  std::set<std::string> groups;
  std::vector<TxnOffset> offsets;  // the last staged per group and partition, in staging order
};

// Where a TxnLog keeps its state outside a RecordLog: one row per id, versioned. Versions only grow,
// whichever writer takes the next, so that a newer row is always told from an older one.
class TxnStore {
 public:
  struct Row {
    std::string id;
    uint64_t version = 0;
    std::string records;  // the id's live records, framed as RecordLog frames them
  };
  // The row as written, or as found when another writer had changed it (version mismatch: `conflict`;
  // nullopt: no row now).
  struct Written {
    Status status{};
    bool conflict = false;
    std::optional<Row> row{};
  };

  // A transaction's end, which a store that writes_ends() writes in the database transaction of the
  // id's end record (docs/ENGINES.md §Transactions): the producer's marker on every partition and, on
  // commit, the staged offsets.
  struct End {
    int64_t producer_id = -1;
    int16_t epoch = 0;
    bool commit = false;
    std::vector<TxnPartition> partitions;
    std::vector<TxnOffset> offsets;
  };

  virtual ~TxnStore() = default;
  // Every id's row as kept now. May block.
  virtual Result<std::vector<Row>> load() = 0;
  // Replaces the id's row, when its version is `version` (0: there is none), with `records` at a new
  // version (empty records: deletes it), and writes `end` with it when given (only to a store whose
  // writes_ends() says so). `done` runs on a thread of the store's.
  virtual void write(const std::string& id, uint64_t version, std::string records, std::optional<End> end,
                     std::function<void(Written)> done) = 0;
  virtual bool writes_ends() const { return false; }
};

class TxnLog final : public RecordLogOwner {
 public:
  using Done = std::function<void(Status)>;

  static Result<std::unique_ptr<TxnLog>> open(FileSystem& fs, std::string data_dir, Executor& executor,
                                              RecordLogOptions options = {});
  static std::unique_ptr<TxnLog> in_memory();
  // The state `store` keeps, loaded now.
  static Result<std::unique_ptr<TxnLog>> over(std::unique_ptr<TxnStore> store);
  ~TxnLog() override;
  TxnLog(const TxnLog&) = delete;
  TxnLog& operator=(const TxnLog&) = delete;

  // Sets the id's header. A status without an active transaction clears its partitions, groups and
  // offsets. With `end` (writes_ends()), the transaction's markers and offsets commit with the header.
  void set(TxnHeader header, Done done);
  void set(TxnHeader header, TxnStore::End end, Done done);
  // Whether set() takes a transaction's end to write with it.
  bool writes_ends() const { return store_ && store_->writes_ends(); }
  // Adds partitions, a group, or a staged offset (replacing the group's earlier one on that partition)
  // to the id's transaction.
  void add_partitions(const std::string& id, std::vector<TxnPartition> partitions, Done done);
  // Adds partitions to the id's transaction, beginning it first with `begin` (an Ongoing header) when
  // given. On files shown at once (see above) and answered as `answer` says; elsewhere as set() then
  // add_partitions().
  void join(std::optional<TxnHeader> begin, const std::string& id, std::vector<TxnPartition> partitions,
            Done done, JoinAnswer answer = JoinAnswer::kAtOnce);
  // Records the end of a transaction whose markers and offsets are written (a Complete header). On
  // files shown and answered at once (see above), while the id's next join waits until it is durable:
  // a partition's markers name the producer and epoch, not the transaction, so a restart that found
  // the decision without its end, and the next transaction's batch on a partition of this one, would
  // complete the decision with a marker that ends the next transaction there. Elsewhere as set().
  void end(TxnHeader ended, Done done);
  void add_group(const std::string& id, std::string group, Done done);
  void stage_offset(const std::string& id, TxnOffset offset, Done done);
  // Forgets the id altogether.
  void forget(const std::string& id, Done done);

  std::optional<TxnEntry> find(const std::string& id) const;
  // Every id, ordered by id.
  std::vector<TxnEntry> list() const;
  // Calls `visit` with every id's entry, ordered by id, under the log's read lock: no copies, for scans
  // of many ids. `visit` must not call back into the log.
  void scan(const std::function<void(const TxnEntry&)>& visit) const;
  size_t size() const;
  // Takes what other brokers wrote to the store since this log last read it (newer rows only); nothing
  // for a log of its own. May block.
  Status refresh();

  void close();
  bool failed() const { return (log_ && log_->failed()) || ahead_failed_.load(); }
  // Bytes of the log's records, for tests of the rewrite.
  uint64_t log_bytes() const { return log_ ? log_->log_bytes() : 0; }

  // RecordLogOwner.
  bool replay(std::string_view body) override;
  void live_records(std::string& out) const override;
  uint64_t live_bytes() const override;

 private:
  TxnLog() = default;
  // Applies one parsed record (mu_ held), keeping live_bytes_; false when it names an id it cannot
  // apply to.
  bool apply(std::string_view body);
  static bool apply_record(std::map<std::string, TxnEntry>& entries, std::string_view body);
  // The id a record names; nullopt when it names none.
  static std::optional<std::string> id_of(std::string_view body);
  // The size of the live records that restate `id` (mu_ held); 0 when the log holds none of it.
  uint64_t live_size_locked(const std::string& id) const;
  // Replaces what the log holds of `id` (mu_ held), keeping live_bytes_.
  void put_locked(const std::string& id, std::optional<TxnEntry> entry);
  // A row's records applied to nothing: the entry they state, nullopt when they are not whole.
  static std::optional<TxnEntry> entry_of(const TxnStore::Row& row);
  // The store's way of write(): queued behind the id's write in flight, if any.
  void write_row(std::string body, std::optional<TxnStore::End> end, Done done);
  // Writes the first queued change of `id`.
  void write_next_row(const std::string& id);
  // Answers the first queued change of `id` with `s`, then writes the next.
  void row_written(const std::string& id, Status s);
  // Appends the records that restate `e` to `out`, framed (live_records()).
  static void append_live(std::string& out, const TxnEntry& e);
  void write(std::string body, Done done);
  // On files: applies `body` now and appends it without waiting for it (join(), end()); `durable`, if
  // given, runs once it is (or failed to be) written.
  Status write_ahead(std::string body, std::function<void(Status)> durable = {});
  // The failure of a change written ahead: every later change is refused with it.
  Status ahead_failure() const;

  mutable std::shared_mutex mu_;
  std::map<std::string, TxnEntry> entries_;
  std::atomic<uint64_t> live_bytes_{0};  // the size of live_records(), kept as entries change
  std::map<std::string, uint64_t> versions_;  // each id's row version, with a store
  struct RowWrite {
    std::string body;
    std::optional<TxnStore::End> end;
    Done done;
  };
  std::mutex row_writes_mu_;
  std::map<std::string, std::deque<RowWrite>> row_writes_;  // per id: the change in flight first
  std::atomic<bool> ahead_failed_{false};
  // Ids whose end was written ahead and is not durable yet, each with the joins waiting for it.
  std::mutex ends_mu_;
  std::map<std::string, std::vector<std::function<void()>>> ends_ahead_;
  std::unique_ptr<TxnStore> store_;
  std::unique_ptr<RecordLog> log_;  // null in memory; last: closed before the state its callbacks change goes
};

}  // namespace streamd
