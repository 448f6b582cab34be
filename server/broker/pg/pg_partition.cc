#include "server/broker/pg/pg_partition.h"

#include <algorithm>
#include <utility>

#include "server/broker/batch_entries.h"
#include "server/storage/record_reader.h"

namespace streamd {
namespace {

// How many batches a read fetches per query.
constexpr uint32_t kBatchesPerQuery = 256;

}  // namespace

PgHead pg_head_from(const PgResult& r, int row, int c) {
  PgHead h;
  h.first = Offset(static_cast<uint64_t>(r.int8(row, c)));
  h.next = Offset(static_cast<uint64_t>(r.int8(row, c + 1)));
  h.bytes = static_cast<uint64_t>(r.int8(row, c + 2));
  h.last_at = Timestamp{r.int8(row, c + 3)};
  h.active_base = Offset(static_cast<uint64_t>(r.int8(row, c + 4)));
  h.active_bytes = static_cast<uint64_t>(r.int8(row, c + 5));
  h.active_min_at = Timestamp{r.int8(row, c + 6)};
  h.segments = static_cast<uint32_t>(r.int4(row, c + 7));
  if (!r.is_null(row, c + 8)) h.first_open = Offset(static_cast<uint64_t>(r.int8(row, c + 8)));
  return h;
}

PgPartition::PgPartition(PgPool& pool, PgNotifier& notifier, int64_t stream_id, int32_t part, std::string name,
                         uint64_t segment_bytes, Executor& executor, const Clock& clock, const PgHead& head,
                         const PgAppendSettings& settings)
    : pool_(pool),
      notifier_(notifier),
      stream_id_(stream_id),
      part_(part),
      name_(std::move(name)),
      segment_bytes_(segment_bytes),
      clock_(clock),
      settings_(settings),
      head_(head),
      own_next_(head.next),
      commit_(executor, Status(Code::kUnavailable, "The stream is closed", {{"path", name_}}),
              [this](std::vector<Pending>& group) { append_group(group); }) {}

PgPartition::~PgPartition() { close(); }

void PgPartition::close() {
  closing_ = true;
  commit_.close();
}

void PgPartition::append(std::string batch, AppendDone done) {
  commit_.submit(Pending{std::move(batch), std::move(done), std::nullopt});
}

void PgPartition::set_commit_listener(CommitListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void PgPartition::notify_listener(Offset next) const {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(next);
}

const std::string& PgPartition::head_sql(bool lock) {
  static const std::string plain =
      std::string("SELECT ") + kPgHeadColumns + " FROM streamd_heads WHERE stream_id = $1 AND part = $2";
  static const std::string locking = plain + " FOR UPDATE";
  return lock ? locking : plain;
}

Result<PgHead> PgPartition::head_in(const PgResult& r) const {
  if (r.rows() == 0) {
    return Status(Code::kStreamBackendFailed, "the partition's head row is gone (the stream was deleted)", where());
  }
  return pg_head_from(r, 0, 0);
}

Result<PgHead> PgPartition::read_head(PgConnection& conn, bool lock) const {
  PgParams params;
  params.int8(stream_id_).int4(part_);
  auto r = lock ? conn.exec_prepared("read head", kLockedHeadName, head_sql(true), params)
                : conn.exec_prepared("read head", "streamd_head", head_sql(false), params);
  if (!r.ok()) return r.status();
  return head_in(*r);
}

Result<PgHead> PgPartition::lock_head(PgConnection& conn) const {
  PgParams params;
  params.int8(stream_id_).int4(part_);
  auto r = conn.pipeline("append", {{kLockedHeadName, &head_sql(true), &params}}, PgPipelineEnd::kHold);
  if (!r.ok()) return r.status();
  auto head = head_in((*r)[0]);
  if (!head.ok()) (void)conn.sync("append");  // nothing was written: the lock goes with it
  return head;
}

void PgPartition::hold_locked_head(const PgHead& head) {
  {
    std::lock_guard lock(mu_);
    // Whether another broker appended since this one's last append: if not, the next group goes
    // without the lock again.
    contended_ = head.next != own_next_;
  }
  set_head(head);
}

void PgPartition::set_head(const PgHead& head) {
  std::lock_guard lock(mu_);
  head_ = head;
  head_stale_ = false;
}

void PgPartition::apply_maintenance(const PgHead& after) {
  std::lock_guard lock(mu_);
  ++maintenance_generation_;
  if (after.next >= head_.next) {
    head_ = after;
    return;
  }
  head_.first = std::max(head_.first, after.first);
  head_stale_ = true;
}

uint64_t PgPartition::maintenance_generation() const {
  std::lock_guard lock(mu_);
  return maintenance_generation_;
}

void PgPartition::refresh(const PgHead& head, uint64_t generation) const {
  Offset before;
  {
    std::lock_guard lock(mu_);
    before = head_.next;
    // Only forward: a poll that read the row before this broker's own append committed is older.
    if (head.next < head_.next) return;
    // Read before this broker's retention or trim committed: its bytes and segments are the ones that
    // pass removed. The next poll reads the row as it is now.
    if (generation != maintenance_generation_) return;
    const Offset first = std::max(head_.first, head.first);  // a local trim the poll did not see yet
    head_ = head;
    head_.first = first;
  }
  if (head.next > before) notify_listener(head.next);
}

Status PgPartition::with_fields(Status s) const {
  if (s.field("path").empty()) s.with("path", name_);
  return s;
}

Bounds PgPartition::bounds() const {
  std::lock_guard lock(mu_);
  return {head_.first, head_.next};
}

uint64_t PgPartition::size_bytes() const {
  std::lock_guard lock(mu_);
  return head_.bytes;
}

uint32_t PgPartition::segment_count() const {
  std::lock_guard lock(mu_);
  return head_.segments;
}

Result<Bounds> PgPartition::fresh_bounds() const {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  const uint64_t generation = maintenance_generation();
  auto head = read_head(**lease, false);
  if (!head.ok()) return with_fields(head.status());
  refresh(*head, generation);  // wakes this broker's long polls too
  return bounds();
}

Result<ReadResult> PgPartition::read(Offset from, uint32_t max_records, uint64_t max_bytes) const {
  return read_shaped(from, max_records, max_bytes, ReadShape::kRecords);
}

Result<ReadResult> PgPartition::read_batches(Offset from, uint32_t max_records, uint64_t max_bytes) const {
  return read_shaped(from, max_records, max_bytes, ReadShape::kBatches);
}

Result<ReadResult> PgPartition::read_shaped(Offset from, uint32_t max_records, uint64_t max_bytes,
                                            ReadShape shape) const {
  Bounds b = bounds();
  // Where this broker knows of nothing to read, another may have appended: the head row decides, so a
  // read through any broker sees what any other acknowledged and is never refused OFFSET_AHEAD by a
  // stale head.
  if (from >= b.next && max_records > 0) {
    auto fresh = fresh_bounds();
    if (!fresh.ok()) return fresh.status();
    b = *fresh;
  }
  STREAMD_RETURN_IF_ERROR(check_read_start(b, from));
  ReadResult out;
  out.next_from = from;
  if (from == b.next || max_records == 0) return out;
  // Not bounded by the head this broker holds: a snapshot holds a prefix of the partition, whole
  // batches only, so what another broker appended meanwhile is read too.
  Status queried = [&]() -> Status {
    auto lease = pool_.acquire();
    if (!lease.ok()) return lease.status();
    ReadBudget budget{max_records, max_bytes};
    for (;;) {
      const uint32_t limit = std::min(budget.records_left, kBatchesPerQuery);
      PgParams params;
      params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(out.next_from.value));
      params.int4(static_cast<int32_t>(limit));
      static const std::string sql =
          "SELECT end_offset, appended_at, data FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
          "end_offset > $3 ORDER BY end_offset LIMIT $4";
      auto rows = (*lease)->exec_prepared("read", "streamd_read", sql, params);
      if (!rows.ok()) return rows.status();
      bool used_any = false;
      for (int row = 0; row < rows->rows() && !budget.spent(); ++row) {
        const Offset batch_end(static_cast<uint64_t>(rows->int8(row, 0)));
        used_any =
            take_batch_entries(rows->bytes(row, 2), Timestamp{rows->int8(row, 1)}, budget, out, shape) ||
            used_any;
        if (budget.spent()) break;
        // Past every offset of this batch, compaction's holes included.
        out.next_from = std::max(out.next_from, batch_end);
      }
      if (used_any) out.owners.push_back(rows->owner());
      if (budget.spent() || static_cast<uint32_t>(rows->rows()) < limit) return Status();
    }
  }();  // the connection goes back before fresh_bounds takes one
  if (!queried.ok()) return with_fields(queried);
  // Read past the head held here: take the database's, so bounds() never says less than was read.
  if (out.next_from > b.next) (void)fresh_bounds();
  return out;
}

Result<Offset> PgPartition::offset_at(Timestamp t) const {
  const Bounds b = bounds();
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(b.first.value)).int8(t.micros);
  // Instants never decrease along a partition: the first batch at or after t holds the answer.
  auto r = (*lease)->exec("offset at",
                          "SELECT base_offset FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
                          "end_offset > $3 AND appended_at >= $4 ORDER BY end_offset LIMIT 1",
                          params);
  if (!r.ok()) return with_fields(r.status());
  if (r->rows() == 0) return b.next;
  return std::clamp(Offset(static_cast<uint64_t>(r->int8(0, 0))), b.first, b.next);
}

Result<std::optional<TimedOffset>> PgPartition::offset_for_create_time(CreateTime t) const {
  const Bounds b = bounds();
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  Offset from = b.first;
  for (;;) {
    PgParams params;
    params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(from.value)).int8(t.millis);
    // max_ts says which batch may hold the answer without reading any batch's bytes; rows from before
    // schema version 2 have none, and their batches no create times (docs/ENGINES.md §Schema).
    static const std::string sql =
        "SELECT end_offset, appended_at, data FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
        "end_offset > $3 AND records > 0 AND COALESCE(max_ts, appended_at / 1000) >= $4 ORDER BY end_offset "
        "LIMIT 1";
    auto r = (*lease)->exec_prepared("create-time lookup", "streamd_create_time", sql, params);
    if (!r.ok()) return with_fields(r.status());
    if (r->rows() == 0) return std::optional<TimedOffset>();
    const Timestamp appended_at{r->int8(0, 1)};
    RecordReader records(r->bytes(0, 2));
    RecordView rec;
    while (records.next(rec)) {
      if (rec.offset < b.first) continue;
      const int64_t ts = rec.create_time ? rec.create_time->millis : appended_at.micros / 1000;
      if (ts >= t.millis) return std::optional<TimedOffset>(TimedOffset{rec.offset, ts});
    }
    if (records.error()) {
      return with_fields(Status(Code::kStreamBackendFailed,
                                "a batch's records do not parse during a time lookup",
                                {{"reason", records.reason()}}));
    }
    // Only records below first reached t: look further.
    from = Offset(static_cast<uint64_t>(r->int8(0, 0)));
  }
}

Result<std::optional<ReadResult>> PgPartition::peek() const {
  const Bounds b = bounds();
  if (b.first == b.next) return std::optional<ReadResult>();
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(b.first.value));
  params.int8(static_cast<int64_t>(b.next.value));
  // The newest batch that still holds a record (compaction may have emptied the last ones).
  auto r = (*lease)->exec("peek",
                          "SELECT appended_at, data FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
                          "end_offset > $3 AND base_offset < $4 AND records > 0 ORDER BY end_offset DESC LIMIT 1",
                          params);
  if (!r.ok()) return with_fields(r.status());
  if (r->rows() == 0) return std::optional<ReadResult>();
  RecordReader records(r->bytes(0, 1));
  RecordView rec;
  std::optional<EntryView> tail;
  while (records.next(rec)) tail = make_entry(rec, Timestamp{r->int8(0, 0)}, r->bytes(0, 1));
  if (!tail || tail->offset < b.first) return std::optional<ReadResult>();
  ReadResult out;
  out.entries.push_back(*tail);
  out.next_from = tail->offset + 1;
  out.owners.push_back(r->owner());
  return std::optional<ReadResult>(std::move(out));
}

}  // namespace streamd
