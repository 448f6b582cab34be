#include "server/broker/pg/pg_txn_store.h"

#include <map>

namespace streamd {

PgTxnStore::PgTxnStore(PgPool& pool, Executor& executor, PgEndWriter* ends)
    : pool_(pool),
      ends_(ends),
      commit_(executor, Status(Code::kUnavailable, "the engine is closing"),
              [this](std::vector<Pending>& group) { write_group(group); }) {}

PgTxnStore::~PgTxnStore() { commit_.close(); }

TxnStore::Row PgTxnStore::row_at(const PgResult& r, int row) {
  return {std::string(r.bytes(row, 0)), static_cast<uint64_t>(r.int8(row, 1)), std::string(r.bytes(row, 2))};
}

Result<std::vector<TxnStore::Row>> PgTxnStore::load() {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  auto rows = (*lease)->exec("read transactions",
                             "SELECT transactional_id, version, state FROM streamd_transactions ORDER BY "
                             "transactional_id");
  if (!rows.ok()) return rows.status();
  std::vector<Row> out;
  out.reserve(static_cast<size_t>(rows->rows()));
  for (int r = 0; r < rows->rows(); ++r) out.push_back(row_at(*rows, r));
  return out;
}

void PgTxnStore::write(const std::string& id, uint64_t version, std::string records, std::optional<End> end,
                       std::function<void(Written)> done) {
  commit_.submit(Pending{id, version, std::move(records), std::move(end), std::move(done)});
}

void PgTxnStore::write_group(std::vector<Pending>& group) {
  std::vector<Written> answers(group.size());
  std::vector<size_t> raced;
  std::vector<std::function<void()>> after;
  bool refused = false;  // a statement of the group failed on a connection that still works
  Status s = [&]() -> Status {
    auto lease = pool_.acquire();
    if (!lease.ok()) return lease.status();
    // The partitions' and streams' statements of the ends take this connection: one transaction.
    PgPool::Pin pin(*lease);
    PgConnection& conn = **lease;
    after.clear();
    raced.clear();
    Status rows = write_rows(conn, group, answers, raced, after);
    if (!rows.ok()) {
      refused = !conn.broken();
      if (refused) (void)conn.run("write transactions", "ROLLBACK");
      return rows;
    }
    // An insert that met a row another broker created since this one looked: that row is the answer.
    for (size_t i : raced) {
      PgParams key;
      key.text(group[i].id);
      auto found = conn.exec("read transaction",
                             "SELECT transactional_id, version, state FROM streamd_transactions WHERE "
                             "transactional_id = $1",
                             key);
      if (!found.ok()) {
        answers[i] = {found.status()};
      } else {
        answers[i] = {Status(), true, found->rows() == 0 ? std::nullopt : std::optional<Row>(row_at(*found, 0))};
      }
    }
    return Status();
  }();
  if (!s.ok() && refused && group.size() > 1) {
    // One write's failure (a marker a partition refuses, a deadlock with another broker's group) fails
    // the group's transaction: each write goes again alone, so that only its own answer says so.
    for (Pending& p : group) {
      std::vector<Pending> alone;
      alone.push_back(std::move(p));
      write_group(alone);
    }
    return;
  }
  if (s.ok()) {
    for (const std::function<void()>& f : after) f();
  } else {
    for (Written& w : answers) w = {s};
  }
  for (size_t i = 0; i < group.size(); ++i) group[i].answer(std::move(answers[i]));
}

Status PgTxnStore::write_rows(PgConnection& conn, std::vector<Pending>& group, std::vector<Written>& answers,
                              std::vector<size_t>& raced, std::vector<std::function<void()>>& after) {
  // The rows as kept, locked in id order (as every broker locks them) until the commit.
  std::vector<std::string_view> ids;
  for (const Pending& p : group) ids.push_back(p.id);
  // BEGIN and the lock in one round trip, the rows' writes and COMMIT in another (pg_connection.h); the
  // ends' markers and offsets, between them, are statements of the same transaction.
  static const std::string begin = "BEGIN";
  static const std::string commit = "COMMIT";
  static const std::string lock_sql =
      "SELECT transactional_id, version, state FROM streamd_transactions WHERE transactional_id = ANY($1) "
      "ORDER BY transactional_id FOR UPDATE";
  const PgParams none;
  PgParams lock;
  lock.text_array(ids);
  auto locked = conn.pipeline("write transactions",
                              {{"streamd_begin", &begin, &none}, {"streamd_txn_lock", &lock_sql, &lock}},
                              PgPipelineEnd::kSync);
  if (!locked.ok()) return locked.status();
  const PgResult* kept = &(*locked)[1];
  std::map<std::string_view, int> row_of;
  for (int r = 0; r < kept->rows(); ++r) row_of[kept->bytes(r, 0)] = r;

  // Each write goes only when the row is at the version its writer read; the others are answered with
  // the row as it is.
  std::vector<size_t> writes;
  std::vector<const End*> ends;
  for (size_t i = 0; i < group.size(); ++i) {
    auto at = row_of.find(group[i].id);
    const uint64_t version = at == row_of.end() ? 0 : static_cast<uint64_t>(kept->int8(at->second, 1));
    if (version != group[i].version) {
      answers[i] = {Status(), true, at == row_of.end() ? std::nullopt : std::optional<Row>(row_at(*kept, at->second))};
      continue;
    }
    writes.push_back(i);
    if (group[i].end) ends.push_back(&*group[i].end);
  }
  if (!ends.empty()) STREAMD_RETURN_IF_ERROR(ends_->write_ends(ends, after));

  std::vector<std::string_view> insert_ids, insert_states, update_ids, update_states, delete_ids;
  for (size_t i : writes) {
    const Pending& p = group[i];
    if (p.records.empty()) {
      delete_ids.push_back(p.id);
    } else if (p.version == 0) {
      insert_ids.push_back(p.id);
      insert_states.push_back(p.records);
    } else {
      update_ids.push_back(p.id);
      update_states.push_back(p.records);
    }
  }
  static const std::string update_sql =
      "UPDATE streamd_transactions t SET version = nextval('streamd_txn_versions'), state = v.state FROM "
      "unnest($1::text[], $2::bytea[]) AS v(id, state) WHERE t.transactional_id = v.id RETURNING "
      "t.transactional_id, t.version";
  static const std::string insert_sql =
      "INSERT INTO streamd_transactions (transactional_id, version, state) SELECT v.id, "
      "nextval('streamd_txn_versions'), v.state FROM unnest($1::text[], $2::bytea[]) AS v(id, state) ON CONFLICT "
      "(transactional_id) DO NOTHING RETURNING transactional_id, version";
  static const std::string delete_sql = "DELETE FROM streamd_transactions WHERE transactional_id = ANY($1)";
  PgParams updates, inserts, deletes;
  updates.text_array(update_ids).bytea_array(update_states);
  inserts.text_array(insert_ids).bytea_array(insert_states);
  deletes.text_array(delete_ids);
  // Each write returns the id and new version of every row it wrote.
  std::vector<PgStatement> statements;
  if (!update_ids.empty()) statements.push_back({"streamd_txn_update", &update_sql, &updates});
  if (!insert_ids.empty()) statements.push_back({"streamd_txn_insert", &insert_sql, &inserts});
  if (!delete_ids.empty()) statements.push_back({"streamd_txn_delete", &delete_sql, &deletes});
  const size_t writing = statements.size();
  statements.push_back({"streamd_commit", &commit, &none});
  auto written = conn.pipeline("write transactions", statements, PgPipelineEnd::kSync);
  if (!written.ok()) return written.status();
  std::map<std::string, uint64_t> versions;  // of the rows written
  for (size_t n = 0; n < writing; ++n) {
    const PgResult& r = (*written)[n];
    for (int row = 0; row < r.rows(); ++row) versions[std::string(r.bytes(row, 0))] = static_cast<uint64_t>(r.int8(row, 1));
  }
  for (size_t i : writes) {
    const Pending& p = group[i];
    if (p.records.empty()) {
      answers[i] = {Status(), false, std::nullopt};
    } else if (auto v = versions.find(p.id); v != versions.end()) {
      answers[i] = {Status(), false, Row{p.id, v->second, p.records}};
    } else {
      raced.push_back(i);  // an insert another broker's beat
    }
  }
  return Status();
}

}  // namespace streamd
