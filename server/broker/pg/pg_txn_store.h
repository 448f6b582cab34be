// PgTxnStore: the transaction coordinator's state in the PostgreSQL engine (docs/ENGINES.md
// §Transactions): a row of streamd_transactions per transactional id, holding the id's live records as
// the file engine's TRANSACTIONS log frames them, at a version from the sequence
// streamd_txn_versions. Every broker of the database reads and writes the same rows, each write only
// when the row is still at the version the writer read (TxnStore), so that any broker may coordinate
// any id and a broker whose view is stale writes nothing.
//
// Writes queue in a GroupCommit: one database transaction writes every row queued meanwhile, with the
// rows locked and their versions compared first, and with the markers and offsets of the transactions
// that end in it (PgEndWriter), so that a transaction's end record, markers and offsets commit together
// or not at all, and many ends share one commit and one statement per partition.
//
// Thread-safety: every method may be called from any thread; writes run on `executor`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/broker/pg/pg_pool.h"
#include "server/storage/executor.h"
#include "server/storage/group_commit.h"
#include "server/storage/txn_log.h"

namespace streamd {

// Writes transactions' ends in the database transaction open on the calling thread's pinned connection.
class PgEndWriter {
 public:
  virtual ~PgEndWriter() = default;
  // Every marker of `ends` and, of those that commit, every staged offset; adds to `after` what to run
  // once the database transaction committed.
  virtual Status write_ends(const std::vector<const TxnStore::End*>& ends,
                            std::vector<std::function<void()>>& after) = 0;
};

class PgTxnStore final : public TxnStore {
 public:
  // `ends`: null when the engine cannot write a transaction's end in one database transaction (its
  // streams may be in other databases), and the coordinator writes it step by step.
  PgTxnStore(PgPool& pool, Executor& executor, PgEndWriter* ends);
  ~PgTxnStore() override;

  Result<std::vector<Row>> load() override;
  void write(const std::string& id, uint64_t version, std::string records, std::optional<End> end,
             std::function<void(Written)> done) override;
  bool writes_ends() const override { return ends_ != nullptr; }

 private:
  struct Pending {
    std::string id;
    uint64_t version = 0;
    std::string records;
    std::optional<End> end;
    std::function<void(Written)> answer;
    void done(Status s) { answer({std::move(s)}); }
  };

  // The row a result's row states: its columns transactional_id, version, state, in that order.
  static Row row_at(const PgResult& r, int row);
  // One database transaction for the group; answers each write.
  void write_group(std::vector<Pending>& group);
  // Inside it: the rows locked and compared, the ends written, the rows written. `answers` gets each
  // write's outcome but the inserts that met a row another broker created meanwhile (`raced`).
  Status write_rows(PgConnection& conn, std::vector<Pending>& group, std::vector<Written>& answers,
                    std::vector<size_t>& raced, std::vector<std::function<void()>>& after);

  PgPool& pool_;
  PgEndWriter* const ends_;
  GroupCommit<Pending> commit_;
};

}  // namespace streamd
