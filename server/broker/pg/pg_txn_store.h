// PgTxnStore: the transaction coordinator's state in the PostgreSQL engine (docs/ENGINES.md
// §Transactions): a row of streamd_transactions per transactional id, holding the id's live records as
// the file engine's TRANSACTIONS log frames them, at a version from the sequence
// streamd_txn_versions. Every broker of the database reads and writes the same rows, each write only
// when the row is still at the version the writer read (TxnStore), so that any broker may coordinate
// any id and a broker whose view is stale writes nothing. A transaction's end is written with its
// markers and offsets (TxnStore::Together) in one database transaction on one connection, pinned to the
// writing thread so that the partitions' and streams' statements run on it.
//
// Thread-safety: every method may be called from any thread; writes run on `executor`.
#pragma once

#include "server/broker/pg/pg_pool.h"
#include "server/storage/executor.h"
#include "server/storage/txn_log.h"

namespace streamd {

class PgTxnStore final : public TxnStore {
 public:
  PgTxnStore(PgPool& pool, Executor& executor) : pool_(pool), executor_(executor) {}

  Result<std::vector<Row>> load() override;
  void write(const std::string& id, uint64_t version, std::string records, Together together,
             std::function<void(Written)> done) override;
  bool writes_together() const override { return true; }

 private:
  Written write_now(const std::string& id, uint64_t version, const std::string& records, const Together& together);
  // The row's statement on `conn`: the row as written, or nullopt when another writer moved it.
  static Result<std::optional<Row>> write_row(PgConnection& conn, const std::string& id, uint64_t version,
                                              const std::string& records);

  PgPool& pool_;
  Executor& executor_;
};

}  // namespace streamd
