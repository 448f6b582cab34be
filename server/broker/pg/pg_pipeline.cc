// PgConnection's pipelines (pg_connection.h): several statements in one round trip, in libpq's pipeline
// mode. The server runs a pipeline's statements in order as they arrive; a Flush makes it answer them
// without ending the implicit transaction they run in, a Sync ends it (committing it, or rolling it
// back after an error) and is answered once that is done — with synchronous_commit on, once the
// commit is durable.
#include <libpq-fe.h>

#include <optional>
#include <string_view>
#include <vector>

#include "server/broker/pg/pg_connection.h"
#include "server/broker/pg/pg_marshalled.h"

namespace streamd {

pg_result* PgConnection::next_result(std::chrono::steady_clock::time_point deadline, bool& failed) {
  failed = false;
  while (PQisBusy(conn_) != 0) {
    if (!wait_socket(false, deadline)) {
      gave_up_ = true;
      failed = true;
      return nullptr;
    }
    if (PQconsumeInput(conn_) == 0) {
      failed = true;
      return nullptr;
    }
  }
  return PQgetResult(conn_);
}

Result<std::vector<PgResult>> PgConnection::pipeline(std::string_view op, const std::vector<PgStatement>& statements,
                                                     PgPipelineEnd end) {
  if (broken()) return failure(op, nullptr);
  const auto deadline = reply_deadline();
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF && PQenterPipelineMode(conn_) == 0) return failure(op, nullptr);
  // A statement not yet prepared on this connection is prepared in the same round trip, just before it.
  std::vector<const char*> preparing;
  auto being_prepared = [&](const char* name) {
    for (const char* p : preparing) {
      if (std::string_view(p) == name) return true;
    }
    return false;
  };
  std::vector<bool> with_prepare;
  for (const PgStatement& st : statements) {
    const int n = static_cast<int>(st.params->size());
    const bool prepare = prepared_.find(st.name) == prepared_.end() && !being_prepared(st.name);
    if (prepare) {
      if (PQsendPrepare(conn_, st.name, st.sql->c_str(), n, st.params->types_.data()) == 0) {
        const Status s = failure(op, nullptr);
        (void)end_pipeline(op, deadline, false);
        return s;
      }
      preparing.push_back(st.name);
    }
    with_prepare.push_back(prepare);
    const PgMarshalled m(st.params->values_);
    if (PQsendQueryPrepared(conn_, st.name, n, m.values.data(), m.lengths.data(), m.formats.data(), 1) == 0) {
      const Status s = failure(op, nullptr);
      (void)end_pipeline(op, deadline, false);
      return s;
    }
  }
  const bool sent = end == PgPipelineEnd::kSync ? PQpipelineSync(conn_) != 0 : PQsendFlushRequest(conn_) != 0;
  if (!sent || !flush_until(deadline)) return failure(op, nullptr);

  std::vector<PgResult> answers;
  std::optional<Status> error;  // the first statement's to fail; the ones after it were skipped
  size_t i = 0;
  for (const PgStatement& st : statements) {
    for (int query = with_prepare[i++] ? 2 : 1; query > 0; --query) {
      PgResult answer;
      bool ok = true;
      for (;;) {
        bool failed = false;
        pg_result* r = next_result(deadline, failed);
        if (failed || broken()) {
          if (r) PQclear(r);
          return failure(op, nullptr);
        }
        if (r == nullptr) break;  // this query's last result came
        const ExecStatusType status = PQresultStatus(r);
        if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
          answer = PgResult(r);
          continue;
        }
        ok = false;
        if (status != PGRES_PIPELINE_ABORTED && !error) error = failure(op, r);
        PQclear(r);
      }
      if (query == 2) {
        if (ok) prepared_.emplace(st.name);
      } else {
        answers.push_back(std::move(answer));
      }
    }
  }
  if (end == PgPipelineEnd::kSync || error) {
    const Status ended = end_pipeline(op, deadline, end == PgPipelineEnd::kSync);
    if (error) return *error;
    if (!ended.ok()) return ended;
  }
  return answers;
}

Status PgConnection::sync(std::string_view op) {
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF) return Status();
  if (broken()) return failure(op, nullptr);
  return end_pipeline(op, reply_deadline(), false);
}

Status PgConnection::end_pipeline(std::string_view op, std::chrono::steady_clock::time_point deadline,
                                  bool sync_sent) {
  if (!sync_sent && (PQpipelineSync(conn_) == 0 || !flush_until(deadline))) return failure(op, nullptr);
  // An error of the Sync's commit itself arrives before the Sync's answer.
  std::optional<Status> error;
  for (int empty = 0;;) {
    bool failed = false;
    pg_result* r = next_result(deadline, failed);
    if (failed || broken()) {
      if (r) PQclear(r);
      return failure(op, nullptr);
    }
    if (r == nullptr) {
      // Between results of queries skipped after an error; never twice in a row before the Sync's.
      if (++empty > 2) return failure(op, nullptr);
      continue;
    }
    empty = 0;
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    if (status == PGRES_FATAL_ERROR && !error) error = failure(op, r);
    PQclear(r);
  }
  if (PQexitPipelineMode(conn_) == 0) return failure(op, nullptr);
  if (error) return *error;
  return Status();
}

}  // namespace streamd
