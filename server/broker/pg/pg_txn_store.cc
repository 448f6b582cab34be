#include "server/broker/pg/pg_txn_store.h"

namespace streamd {

Result<std::vector<TxnStore::Row>> PgTxnStore::load() {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  auto rows = (*lease)->exec("read transactions",
                             "SELECT transactional_id, version, state FROM streamd_transactions ORDER BY "
                             "transactional_id");
  if (!rows.ok()) return rows.status();
  std::vector<Row> out;
  out.reserve(static_cast<size_t>(rows->rows()));
  for (int r = 0; r < rows->rows(); ++r) {
    out.push_back({std::string(rows->bytes(r, 0)), static_cast<uint64_t>(rows->int8(r, 1)),
                   std::string(rows->bytes(r, 2))});
  }
  return out;
}

void PgTxnStore::write(const std::string& id, uint64_t version, std::string records, Together together,
                       std::function<void(Written)> done) {
  executor_.post([this, id, version, records = std::move(records), together = std::move(together),
                  done = std::move(done)] { done(write_now(id, version, records, together)); });
}

Result<std::optional<TxnStore::Row>> PgTxnStore::write_row(PgConnection& conn, const std::string& id, uint64_t version,
                                                           const std::string& records) {
  PgParams params;
  params.text(id).int8(static_cast<int64_t>(version));
  if (!records.empty()) params.bytea(records);
  // One statement each, compared on the version read: none of them changes a row another writer moved.
  const char* sql =
      records.empty()
          ? "DELETE FROM streamd_transactions WHERE transactional_id = $1 AND version = $2 RETURNING 0::bigint"
      : version == 0
          ? "INSERT INTO streamd_transactions (transactional_id, version, state) SELECT $1, "
            "nextval('streamd_txn_versions'), $3 WHERE $2 = 0 ON CONFLICT (transactional_id) DO NOTHING "
            "RETURNING version"
          : "UPDATE streamd_transactions SET version = nextval('streamd_txn_versions'), state = $3 WHERE "
            "transactional_id = $1 AND version = $2 RETURNING version";
  auto r = conn.exec("write transaction", sql, params);
  if (!r.ok()) return r.status();
  if (r->rows() != 1) return std::optional<Row>();
  return std::optional<Row>(Row{id, static_cast<uint64_t>(r->int8(0, 0)), records});
}

TxnStore::Written PgTxnStore::write_now(const std::string& id, uint64_t version, const std::string& records,
                                        const Together& together) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return {lease.status()};
  PgConnection& conn = **lease;
  Result<std::optional<Row>> written = std::optional<Row>();
  if (together.write) {
    // The partitions' and streams' statements take this connection: one transaction for all of it.
    PgPool::Pin pin(*lease);
    bool moved = false;
    Status s = conn.transaction("end transaction", [&]() -> Status {
      STREAMD_RETURN_IF_ERROR(together.write());
      written = write_row(conn, id, version, records);
      if (!written.ok()) return written.status();
      if (written->has_value()) return Status();
      moved = true;  // rolls back the markers and offsets too
      return Status(Code::kConcurrentTransactions, "the transactional id's row moved");
    });
    if (!s.ok() && !moved) return {s};
    if (s.ok()) together.committed();
  } else {
    written = write_row(conn, id, version, records);
    if (!written.ok()) return {written.status()};
  }
  if (written->has_value()) {
    if (records.empty()) return {Status(), false, std::nullopt};
    return {Status(), false, std::move(*written)};
  }
  // Changed by another broker since this one read it: what it holds now.
  PgParams key;
  key.text(id);
  auto found = conn.exec("read transaction",
                         "SELECT version, state FROM streamd_transactions WHERE transactional_id = $1", key);
  if (!found.ok()) return {found.status()};
  if (found->rows() == 0) return {Status(), true, std::nullopt};
  return {Status(), true, Row{id, static_cast<uint64_t>(found->int8(0, 0)), std::string(found->bytes(0, 1))}};
}

}  // namespace streamd
