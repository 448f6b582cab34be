// PgPartition's idempotent producers (docs/ENGINES.md §"Idempotent producers"): a producer's state —
// its epoch and last five batches on the partition — is a row of streamd_producers, read and written
// in the transaction that appends its batches while it holds the partition's head row. Every broker of
// the database appends to a partition under that lock, so each checks a batch against the same rows:
// a resend that reaches another broker is recognised as the duplicate it is.
#include <algorithm>

#include "server/broker/pg/pg_partition.h"
#include "server/storage/producer_state.h"

namespace streamd {

Status PgPartition::append_idempotent(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                      std::vector<AppendRange>& ranges) {
  const size_t ranges_before = ranges.size();
  std::optional<OwnAppend> done;
  Status s = conn.transaction("append", [&]() -> Status {
    auto head = read_head(conn, /*lock=*/true);
    if (!head.ok()) return head.status();
    {
      std::lock_guard lock(mu_);
      contended_ = head->next != own_next_;
    }
    set_head(*head);

    std::vector<int64_t> ids;
    for (size_t i = begin; i < end; ++i) {
      const ProducerStamp stamp = stamp_of(peek_header(group[i].batch), group[i].batch);
      if (stamp.idempotent() && std::find(ids.begin(), ids.end(), stamp.id) == ids.end()) ids.push_back(stamp.id);
    }
    PgParams read;
    read.int8(stream_id_).int4(part_).int8_array(ids);
    auto rows = conn.exec_prepared("read producers", "streamd_producers_read",
                                   "SELECT state FROM streamd_producers WHERE stream_id = $1 AND part = $2 AND "
                                   "producer_id = ANY($3)",
                                   read);
    if (!rows.ok()) return rows.status();
    ProducerState producers;  // this span's view of the rows
    for (int r = 0; r < rows->rows(); ++r) {
      if (!producers.merge(rows->bytes(r, 0))) {
        return Status(Code::kStreamBackendFailed, "a producer's row in streamd_producers is damaged", where());
      }
    }

    // Checked in order, each against the rows and the batches before it: the offsets a batch would take
    // follow from the head and the batches written before it.
    const Timestamp now = std::max(clock_.now(), head->last_at);
    Offset at = head->next;
    std::vector<int64_t> staged;
    for (size_t i = begin; i < end; ++i) {
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
          group[i].answer = with_fields(std::move(check.refusal));
          continue;
        }
        producers.stage(stamp, h.last_delta, {at, at + h.last_delta}, now);
        if (std::find(staged.begin(), staged.end(), stamp.id) == staged.end()) staged.push_back(stamp.id);
      }
      at = at + (h.last_delta + 1ull);
    }
    producers.settle(SIZE_MAX, now);

    if (at == head->next) {
      done = OwnAppend{*head, 0, 0};  // every batch answered: nothing to write
    } else {
      auto written = append_rows(conn, group, begin, end, *head, ranges);
      if (!written.ok()) return written.status();
      if (!*written) {
        return Status(Code::kStreamBackendFailed, "the partition's head row moved while this broker held its lock",
                      where());
      }
      done = std::move(*written);
    }
    if (staged.empty()) return Status();
    std::vector<std::string> states;
    std::vector<std::string_view> state_views;
    for (int64_t id : staged) states.push_back(producers.snapshot_of({id}));
    for (const std::string& state : states) state_views.push_back(state);
    PgParams write;
    write.int8(stream_id_).int4(part_).int8_array(staged).bytea_array(state_views).int8(now.micros);
    return conn
        .exec_prepared("write producers", "streamd_producers_write",
                       "INSERT INTO streamd_producers (stream_id, part, producer_id, state, last_used) "
                       "SELECT $1, $2, v.id, v.state, $5 FROM unnest($3::bigint[], $4::bytea[]) AS v(id, state) "
                       "ON CONFLICT (stream_id, part, producer_id) DO UPDATE SET state = EXCLUDED.state, "
                       "last_used = EXCLUDED.last_used",
                       write)
        .status();
  });
  if (!s.ok()) {
    ranges.resize(ranges_before);
    // Duplicates fail with the span: one of a batch the span was to write has no first copy now (and
    // the others' producers resend, to be answered next time).
    for (size_t i = begin; i < end; ++i) {
      if (group[i].answer && group[i].answer->ok()) group[i].answer.reset();
    }
    return s;
  }
  took_own_append(*done);
  return Status();
}

Status PgPartition::expire_producers(PgConnection& conn, Timestamp now) {
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(now.micros - settings_.producer_idle_expiry.count());
  return conn
      .exec("expire producers", "DELETE FROM streamd_producers WHERE stream_id = $1 AND part = $2 AND last_used < $3",
            params)
      .status();
}

}  // namespace streamd
