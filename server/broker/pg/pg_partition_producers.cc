// PgPartition's idempotent producers (docs/ENGINES.md §"Idempotent producers"): a producer's state —
// its epoch and last five batches on the partition — is a row of streamd_producers, read and written
// in the transaction that appends its batches while it holds the partition's head row. Every broker of
// the database appends to a partition under that lock, so each checks a batch against the same rows:
// a resend that reaches another broker is recognised as the duplicate it is.
#include <algorithm>

#include "server/broker/pg/pg_partition.h"
#include "server/storage/producer_state.h"
#include "server/storage/txn_marker.h"

namespace streamd {

Status PgPartition::append_idempotent(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                      std::vector<AppendRange>& ranges) {
  const size_t ranges_before = ranges.size();
  auto failed = [&](Status s) {
    ranges.resize(ranges_before);
    // Duplicates fail with the span: one of a batch the span was to write has no first copy now (and
    // the others' producers resend, to be answered next time).
    for (size_t i = begin; i < end; ++i) {
      if (group[i].answer && group[i].answer->ok()) group[i].answer.reset();
    }
    return s;
  };
  // Its statements' own implicit transaction: two round trips, no BEGIN or COMMIT (pg_connection.h).
  IdempotentSpan span(group, begin, end, ranges);
  auto locked = conn.pipeline("append", lock_statements(span), PgPipelineEnd::kHold);
  if (!locked.ok()) return failed(locked.status());
  // From here the transaction is open: every return ends it, through the second round trip or sync().
  if (Status s = took_lock(span, (*locked)[0], (*locked)[1]); !s.ok()) {
    (void)conn.sync("append");
    return failed(s);
  }
  const std::vector<PgStatement> writes = write_statements(span);
  if (writes.empty()) {
    // Every batch answered: nothing to write.
    if (Status s = conn.sync("append"); !s.ok()) return failed(s);
  } else {
    auto written = conn.pipeline("append", writes, PgPipelineEnd::kSync);
    if (!written.ok()) return failed(written.status());
    if (Status s = took_writes(span, *written, 0); !s.ok()) return failed(s);
  }
  took_own_append(*span.done);
  return Status();
}

void PgPartition::note_failed_batches(const std::vector<Pending>& group) {
  // A bound on what an outage can make this remember; forgetting only brings back Kafka's own answer
  // to a gap.
  constexpr size_t kMaxRemembered = 4096;
  std::lock_guard lock(mu_);
  for (const Pending& p : group) {
    const BatchHeader h = peek_header(p.batch);
    if (h.producer.id < 0) continue;
    if (p.answer->ok()) {
      failed_.erase(h.producer.id);
    } else if (p.answer->status().code() == Code::kStreamBackendFailed) {
      if (failed_.size() >= kMaxRemembered) failed_.clear();
      // The earliest one stays: the producer sends its batches again from there.
      failed_.try_emplace(h.producer.id, FailedBatch{h.producer.epoch, h.producer.base_sequence});
    }
  }
}

Status PgPartition::refusal_after_failures(const ProducerStamp& stamp, Status refusal) const {
  if (refusal.code() != Code::kOutOfOrderSequence) return refusal;
  const std::string expected = refusal.field("expected");
  std::lock_guard lock(mu_);
  const auto it = failed_.find(stamp.id);
  if (it == failed_.end() || it->second.epoch != stamp.epoch || std::to_string(it->second.first_sequence) != expected ||
      stamp.first_sequence <= it->second.first_sequence) {
    return refusal;
  }
  return Status(Code::kStreamBackendFailed,
                "Not written: it follows the producer's batch at sequence " + expected +
                    ", which the database failed to write here; send that batch again first",
                {{"producer_id", std::to_string(stamp.id)},
                 {"epoch", std::to_string(stamp.epoch)},
                 {"sequence", std::to_string(stamp.first_sequence)},
                 {"expected", expected}});
}

PgPartition::IdempotentSpan::IdempotentSpan(std::vector<Pending>& of, size_t from, size_t to,
                                            std::vector<AppendRange>& written)
    : group(of), begin(from), end(to), ranges(written) {}

std::vector<PgStatement> PgPartition::lock_statements(IdempotentSpan& span) const {
  std::vector<int64_t> ids;
  for (size_t i = span.begin; i < span.end; ++i) {
    const ProducerStamp stamp = stamp_of(peek_header(span.group[i].batch), span.group[i].batch);
    if (stamp.idempotent() && std::find(ids.begin(), ids.end(), stamp.id) == ids.end()) ids.push_back(stamp.id);
  }
  span.key.int8(stream_id_).int4(part_);
  span.read.int8(stream_id_).int4(part_).int8_array(ids);
  static const std::string read_sql =
      "SELECT state FROM streamd_producers WHERE stream_id = $1 AND part = $2 AND producer_id = ANY($3)";
  // The producers' rows are read after the lock is granted, so that they hold what the broker that held
  // it before committed.
  return {{kLockedHeadName, &head_sql(true), &span.key}, {"streamd_producers_read", &read_sql, &span.read}};
}

Status PgPartition::took_lock(IdempotentSpan& span, const PgResult& head_row, const PgResult& rows) {
  auto head = head_in(head_row);
  if (!head.ok()) return head.status();
  hold_locked_head(*head);
  ProducerState producers;  // this span's view of the rows
  for (int r = 0; r < rows.rows(); ++r) {
    if (!producers.merge(rows.bytes(r, 0))) {
      return Status(Code::kStreamBackendFailed, "a producer's row in streamd_producers is damaged", where());
    }
  }
  // Aborted transactions are rows of their own (a producer's row would grow with each abort).
  producers.forget_aborted_before(Offset(UINT64_MAX));
  const std::vector<OpenTxn> open_before = producers.open_txns();

  // Checked in order, each against the rows and the batches before it: the offsets a batch would take
  // follow from the head and the batches written before it.
  std::vector<Pending>& group = span.group;
  const Timestamp now = std::max(clock_.now(), head->last_at);
  Offset at = head->next;
  std::vector<int64_t> staged;
  for (size_t i = span.begin; i < span.end; ++i) {
    const BatchHeader h = peek_header(group[i].batch);
    const ProducerStamp stamp = stamp_of(h, group[i].batch);
    group[i].answer.reset();
    if (stamp.idempotent()) {
      ProducerState::Check check = producers.check(stamp, h.last_delta);
      if (check.verdict == ProducerState::Verdict::kDuplicate) {
        group[i].answer = check.original;
        continue;
      }
      if (check.verdict == ProducerState::Verdict::kRefused) {
        group[i].answer = with_fields(refusal_after_failures(stamp, std::move(check.refusal)));
        continue;
      }
      producers.stage(stamp, h.last_delta, {at, at + h.last_delta}, now);
      if (std::find(staged.begin(), staged.end(), stamp.id) == staged.end()) staged.push_back(stamp.id);
    }
    at = at + (h.last_delta + 1ull);
  }
  producers.settle(SIZE_MAX, now);
  span.done = OwnAppend{*head, 0, 0};
  if (at == head->next) return Status();  // every batch answered: nothing to write

  // The second round trip's statements: the rows, the transactions they open or end, and the producers'
  // rows. Those after the rows' write only where the head row says it was written.
  span.append = rows_statement(group, span.begin, span.end, *head, span.ranges);
  const auto next = static_cast<int64_t>(span.append->after.head.next.value);
  span.txn_changes = txn_changes_params(open_before, producers, next);
  producers.forget_aborted_before(Offset(UINT64_MAX));
  for (int64_t id : staged) span.states.push_back(producers.snapshot_of({id}));
  std::vector<std::string_view> state_views(span.states.begin(), span.states.end());
  span.write.int8(stream_id_).int4(part_).int8_array(staged).bytea_array(state_views).int8(now.micros).int8(next);
  return Status();
}

std::vector<PgStatement> PgPartition::write_statements(const IdempotentSpan& span) {
  if (!span.append) return {};
  static const std::string write_sql =
      "INSERT INTO streamd_producers (stream_id, part, producer_id, state, last_used) "
      "SELECT $1, $2, v.id, v.state, $5 FROM unnest($3::bigint[], $4::bytea[]) AS v(id, state) "
      "WHERE EXISTS (SELECT 1 FROM streamd_heads WHERE stream_id = $1 AND part = $2 AND next_offset = $6) "
      "ON CONFLICT (stream_id, part, producer_id) DO UPDATE SET state = EXCLUDED.state, "
      "last_used = EXCLUDED.last_used";
  std::vector<PgStatement> out{{kRowsStatementName, &rows_sql(), &span.append->params}};
  if (span.txn_changes) out.push_back({kTxnChangesName, &txn_changes_sql(), &*span.txn_changes});
  out.push_back({"streamd_producers_write", &write_sql, &span.write});
  return out;
}

Status PgPartition::took_writes(IdempotentSpan& span, const std::vector<PgResult>& answers, size_t first) const {
  if (answers[first].affected() == 0) {
    return Status(Code::kStreamBackendFailed, "the partition's head row moved while this broker held its lock",
                  where());
  }
  span.done = span.append->after;
  if (span.txn_changes) {
    const PgResult& first_open = answers[first + 1];
    if (first_open.rows() != 1) {
      return Status(Code::kStreamBackendFailed, "the partition's head row is missing", where());
    }
    span.done->head.first_open.reset();
    if (!first_open.is_null(0, 0)) span.done->head.first_open = Offset(static_cast<uint64_t>(first_open.int8(0, 0)));
  }
  return Status();
}

std::optional<PgParams> PgPartition::txn_changes_params(const std::vector<OpenTxn>& before,
                                                       const ProducerState& after, int64_t next) const {
  const std::vector<OpenTxn> now_open = after.open_txns();
  // Every abort `after` holds is this span's: the rows' were forgotten when read.
  const std::vector<AbortedTxn> aborted = after.aborted_between(Offset(0), Offset(UINT64_MAX));
  std::vector<int64_t> opened_ids, opened_first, ended_ids, aborted_ids, aborted_first, aborted_marker;
  std::vector<int32_t> opened_epoch;
  for (const OpenTxn& t : now_open) {
    if (std::find(before.begin(), before.end(), t) != before.end()) continue;
    opened_ids.push_back(t.producer.id);
    opened_epoch.push_back(t.producer.epoch);
    opened_first.push_back(static_cast<int64_t>(t.first.value));
  }
  for (const OpenTxn& t : before) {
    if (std::find(now_open.begin(), now_open.end(), t) == now_open.end()) ended_ids.push_back(t.producer.id);
  }
  for (const AbortedTxn& a : aborted) {
    aborted_ids.push_back(a.producer_id);
    aborted_first.push_back(static_cast<int64_t>(a.first.value));
    aborted_marker.push_back(static_cast<int64_t>(a.marker.value));
  }
  if (opened_ids.empty() && ended_ids.empty()) return std::nullopt;
  PgParams params;
  params.int8(stream_id_).int4(part_).int8_array(ended_ids).int8_array(opened_ids).int4_array(opened_epoch);
  params.int8_array(opened_first).int8_array(aborted_ids).int8_array(aborted_first).int8_array(aborted_marker);
  params.int8(next);
  return params;
}

const std::string& PgPartition::txn_changes_sql() {
  // One statement: the ended transactions' rows go, the opened ones' come, the aborted ones are kept
  // for readers, and the head names the earliest still open — each only where the head row says the
  // span's rows were written ($10: the offset after them).
  static const std::string sql =
      "WITH g AS (SELECT 1 FROM streamd_heads WHERE stream_id = $1 AND part = $2 AND next_offset = $10), "
      "d AS (DELETE FROM streamd_open_txns WHERE stream_id = $1 AND part = $2 AND producer_id = ANY($3) "
      "AND NOT (producer_id = ANY($4)) AND EXISTS (SELECT 1 FROM g) RETURNING producer_id), "
      // A producer that ended a transaction and began its next in the span is updated in place: the
      // sub-statements of one statement do not see each other's rows.
      "i AS (INSERT INTO streamd_open_txns (stream_id, part, producer_id, epoch, first_offset) "
      "SELECT $1, $2, v.id, v.epoch, v.first FROM unnest($4::bigint[], $5::int[], $6::bigint[]) AS v(id, epoch, first) "
      "WHERE EXISTS (SELECT 1 FROM g) "
      "ON CONFLICT (stream_id, part, producer_id) DO UPDATE SET epoch = EXCLUDED.epoch, "
      "first_offset = EXCLUDED.first_offset RETURNING first_offset), "
      "a AS (INSERT INTO streamd_aborted_txns (stream_id, part, marker_offset, producer_id, first_offset) "
      "SELECT $1, $2, v.marker, v.id, v.first FROM unnest($7::bigint[], $8::bigint[], $9::bigint[]) "
      "AS v(id, first, marker) WHERE EXISTS (SELECT 1 FROM g)), "
      // The rows this statement deletes and inserts are not visible to its own subqueries: the earliest
      // open transaction is the earliest of those kept and those inserted.
      "kept AS (SELECT first_offset FROM streamd_open_txns WHERE stream_id = $1 AND part = $2 AND "
      "NOT (producer_id = ANY($3)) UNION ALL SELECT first_offset FROM i) "
      "UPDATE streamd_heads SET first_open = (SELECT min(first_offset) FROM kept) "
      "WHERE stream_id = $1 AND part = $2 AND next_offset = $10 RETURNING first_open";
  return sql;
}


Offset PgPartition::last_stable() const {
  std::lock_guard lock(mu_);
  return head_.last_stable();
}

Result<std::vector<AbortedTxn>> PgPartition::aborted_between(Offset from, Offset to) const {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(from.value)).int8(static_cast<int64_t>(to.value));
  // Ordered by marker, as ProducerState::aborted_between answers: those ending at or before `from` are
  // past.
  auto rows = (*lease)->exec_prepared("aborted transactions", "streamd_aborted_between",
                                      "SELECT producer_id, first_offset, marker_offset FROM streamd_aborted_txns "
                                      "WHERE stream_id = $1 AND part = $2 AND marker_offset > $3 AND first_offset < $4 "
                                      "ORDER BY marker_offset",
                                      params);
  if (!rows.ok()) return with_fields(rows.status());
  std::vector<AbortedTxn> out;
  for (int r = 0; r < rows->rows(); ++r) {
    out.push_back({rows->int8(r, 0), Offset(static_cast<uint64_t>(rows->int8(r, 1))),
                   Offset(static_cast<uint64_t>(rows->int8(r, 2)))});
  }
  return out;
}

Result<std::vector<ProducerIdentity>> PgPartition::open_producers() const {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams params;
  params.int8(stream_id_).int4(part_);
  auto rows = (*lease)->exec("open transactions",
                             "SELECT producer_id, epoch FROM streamd_open_txns WHERE stream_id = $1 AND part = $2 "
                             "ORDER BY first_offset",
                             params);
  if (!rows.ok()) return with_fields(rows.status());
  std::vector<ProducerIdentity> out;
  for (int r = 0; r < rows->rows(); ++r) {
    out.push_back({rows->int8(r, 0), static_cast<int16_t>(rows->int4(r, 1))});
  }
  return out;
}

Status PgPartition::expire_producers(PgConnection& conn, Timestamp now) {
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(now.micros - settings_.producer_idle_expiry.count());
  // A producer with a transaction open here is kept until its marker (its row says where it began).
  return conn
      .exec("expire producers",
            "DELETE FROM streamd_producers p WHERE stream_id = $1 AND part = $2 AND last_used < $3 AND NOT EXISTS "
            "(SELECT 1 FROM streamd_open_txns t WHERE t.stream_id = p.stream_id AND t.part = p.part AND "
            "t.producer_id = p.producer_id)",
            params)
      .status();
}

}  // namespace streamd
