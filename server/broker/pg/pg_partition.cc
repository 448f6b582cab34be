#include "server/broker/pg/pg_partition.h"

#include <algorithm>
#include <utility>

#include "server/broker/batch_entries.h"

namespace streamd {
namespace {

// One append statement carries at most this many batches, or about this many bytes; a larger group is
// several statements in a row (each one its own commit, in order).
constexpr size_t kRowsPerStatement = 1000;
constexpr uint64_t kBytesPerStatement = 32ull << 20;
// How often a group is resealed and retried after other brokers moved the head first.
constexpr int kMaxAttempts = 16;
// How many batches a read fetches per query.
constexpr uint32_t kBatchesPerQuery = 256;

struct ClosedSegment {
  Offset base;
  Offset end;
  uint64_t bytes;
  Timestamp min_at;
  Timestamp max_at;
};

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
  return h;
}

PgPartition::PgPartition(PgPool& pool, PgNotifier& notifier, int64_t stream_id, int32_t part, std::string name,
                         uint64_t segment_bytes, Executor& executor, const Clock& clock, const PgHead& head)
    : pool_(pool),
      notifier_(notifier),
      stream_id_(stream_id),
      part_(part),
      name_(std::move(name)),
      segment_bytes_(segment_bytes),
      clock_(clock),
      head_(head),
      commit_(executor, Status(Code::kUnavailable, "The stream is closed", {{"path", name_}}),
              [this](std::vector<Pending>& group) { append_group(group); }) {}

PgPartition::~PgPartition() { close(); }

void PgPartition::close() { commit_.close(); }

void PgPartition::append(std::string batch, AppendDone done) {
  commit_.submit(Pending{std::move(batch), std::move(done)});
}

void PgPartition::set_commit_listener(CommitListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void PgPartition::notify_listener(Offset next) const {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(next);
}

Result<PgHead> PgPartition::read_head(PgConnection& conn, bool lock) const {
  PgParams params;
  params.int8(stream_id_).int4(part_);
  static const std::string plain =
      std::string("SELECT ") + kPgHeadColumns + " FROM streamd_heads WHERE stream_id = $1 AND part = $2";
  static const std::string locking = plain + " FOR UPDATE";
  auto r = lock ? conn.exec("read head", locking, params) : conn.exec_prepared("read head", "streamd_head", plain, params);
  if (!r.ok()) return r.status();
  if (r->rows() == 0) {
    return Status(Code::kStreamBackendFailed, "the partition's head row is gone (the stream was deleted)", where());
  }
  return pg_head_from(*r, 0, 0);
}

void PgPartition::set_head(const PgHead& head) {
  std::lock_guard lock(mu_);
  head_ = head;
  head_stale_ = false;
}

void PgPartition::apply_maintenance(const PgHead& after) {
  std::lock_guard lock(mu_);
  if (after.next >= head_.next) {
    head_ = after;
    return;
  }
  head_.first = std::max(head_.first, after.first);
  head_stale_ = true;
}

void PgPartition::refresh(const PgHead& head) const {
  Offset before;
  {
    std::lock_guard lock(mu_);
    before = head_.next;
    // Only forward: a poll that read the row before this broker's own append committed is older.
    if (head.next < head_.next) return;
    const Offset first = std::max(head_.first, head.first);  // a local trim the poll did not see yet
    head_ = head;
    head_.first = first;
  }
  if (head.next > before) notify_listener(head.next);
}

void PgPartition::append_group(std::vector<Pending>& group) {
  std::vector<AppendRange> ranges;
  ranges.reserve(group.size());
  auto lease = pool_.acquire();
  Status failure = lease.ok() ? Status() : lease.status();
  size_t begin = 0;
  while (failure.ok() && begin < group.size()) {
    size_t end = begin;
    uint64_t bytes = 0;
    while (end < group.size() && end - begin < kRowsPerStatement && (end == begin || bytes < kBytesPerStatement)) {
      bytes += group[end++].batch.size();
    }
    bool written = false;
    for (int attempt = 0; attempt < kMaxAttempts && failure.ok() && !written; ++attempt) {
      PgHead head;
      bool stale;
      {
        std::lock_guard lock(mu_);
        head = head_;
        stale = head_stale_ || attempt > 0;
      }
      if (stale) {
        auto fresh = read_head(**lease, false);
        if (!fresh.ok()) {
          failure = fresh.status();
          break;
        }
        head = *fresh;
        set_head(head);
      }
      const size_t done_before = ranges.size();
      auto ok = append_rows(**lease, group, begin, end, head, ranges);
      if (!ok.ok()) {
        failure = ok.status();
        ranges.resize(done_before);  // not written, or not known to be
      } else if (!*ok) {
        ranges.resize(done_before);  // another broker went first: reseal and retry
      } else {
        written = true;
      }
    }
    if (failure.ok() && !written) {
      failure = Status(Code::kStreamBackendFailed, "other brokers kept moving the partition's head first",
                       {{"path", name_}, {"attempts", std::to_string(kMaxAttempts)}});
    }
    if (written) begin = end;
  }
  if (!failure.ok()) {
    std::lock_guard lock(mu_);
    head_stale_ = true;  // what the failed statement did is not known here
  }
  Offset next;
  {
    std::lock_guard lock(mu_);
    next = head_.next;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    if (i < ranges.size()) {
      group[i].done(ranges[i]);
    } else {
      group[i].done(with_fields(failure));
    }
  }
  if (!ranges.empty()) {
    notifier_.signal();  // other brokers' long polls
    notify_listener(next);
  }
}

Status PgPartition::with_fields(Status s) const {
  if (s.field("path").empty()) s.with("path", name_);
  return s;
}

Result<bool> PgPartition::append_rows(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                      PgHead& before, std::vector<AppendRange>& ranges) {
  PgHead h = before;
  // Instants never go backwards along a partition, even when a clock (this broker's or another's) does.
  const Timestamp now = std::max(clock_.now(), h.last_at);
  std::vector<ClosedSegment> closed;
  uint64_t added = 0;
  for (size_t i = begin; i < end; ++i) {
    std::string& batch = group[i].batch;
    const BatchHeader hdr = peek_header(batch);
    const Offset base = h.next;
    seal_batch(batch, base, now);
    const uint64_t size = batch.size();
    // A segment is rolled before a batch would grow it past segment_bytes, as on files.
    if (h.active_bytes > 0 && h.active_bytes + size > segment_bytes_) {
      closed.push_back({h.active_base, base, h.active_bytes, h.active_min_at, h.last_at});
      h.active_base = base;
      h.active_bytes = 0;
      ++h.segments;
    }
    if (h.active_bytes == 0) h.active_min_at = now;
    h.active_bytes += size;
    h.bytes += size;
    added += size;
    h.next = base + (hdr.last_delta + 1ull);
    h.last_at = now;
    ranges.push_back({base, base + hdr.last_delta});
  }

  // Rows go as arrays, so the statement's text is one for any group: prepared once per connection.
  std::vector<int64_t> seg_end, seg_base, seg_bytes, seg_min, seg_max;
  for (const ClosedSegment& c : closed) {
    seg_end.push_back(static_cast<int64_t>(c.end.value));
    seg_base.push_back(static_cast<int64_t>(c.base.value));
    seg_bytes.push_back(static_cast<int64_t>(c.bytes));
    seg_min.push_back(c.min_at.micros);
    seg_max.push_back(c.max_at.micros);
  }
  std::vector<int64_t> row_end, row_base;
  std::vector<int32_t> row_records;
  std::vector<std::string_view> row_data;
  for (size_t i = begin; i < end; ++i) {
    const AppendRange& r = ranges[ranges.size() - (end - i)];
    row_end.push_back(static_cast<int64_t>(r.last.value + 1));
    row_base.push_back(static_cast<int64_t>(r.first.value));
    row_records.push_back(static_cast<int32_t>(peek_header(group[i].batch).record_count));
    row_data.push_back(group[i].batch);
  }
  PgParams params;
  params.int8(stream_id_).int4(part_);
  params.int8(static_cast<int64_t>(h.next.value)).int8(static_cast<int64_t>(added)).int8(now.micros);
  params.int8(static_cast<int64_t>(h.active_base.value)).int8(static_cast<int64_t>(h.active_bytes));
  params.int8(h.active_min_at.micros).int4(static_cast<int32_t>(closed.size()));
  params.int8(static_cast<int64_t>(before.next.value)).int8(static_cast<int64_t>(before.active_base.value));
  params.int8_array(seg_end).int8_array(seg_base).int8_array(seg_bytes).int8_array(seg_min).int8_array(seg_max);
  params.int8_array(row_end).int8_array(row_base).int4_array(row_records).bytea_array(row_data);
  static const std::string sql =
      "WITH h AS (UPDATE streamd_heads SET next_offset = $3, bytes = bytes + $4, last_at = $5, active_base = $6, "
      "active_bytes = $7, active_min_at = $8, segments = segments + $9 "
      "WHERE stream_id = $1 AND part = $2 AND next_offset = $10 AND active_base = $11 RETURNING stream_id, part), "
      // The segments this group closed (mostly none: a data-modifying CTE runs even when unreferenced).
      "s AS (INSERT INTO streamd_segments (stream_id, part, end_offset, base_offset, bytes, min_at, max_at) "
      "SELECT h.stream_id, h.part, v.e, v.b, v.n, v.lo, v.hi FROM h, unnest($12, $13, $14, $15, $16) "
      "AS v(e, b, n, lo, hi)) "
      "INSERT INTO streamd_batches (stream_id, part, end_offset, base_offset, appended_at, records, data) "
      "SELECT h.stream_id, h.part, v.e, v.b, $5, v.r, v.d FROM h, unnest($17, $18, $19, $20) AS v(e, b, r, d)";

  auto r = conn.exec_prepared("append", "streamd_append", sql, params);
  if (!r.ok()) return r.status();
  if (r->affected() == 0) return false;
  std::lock_guard lock(mu_);
  // A refresh that read the row after this commit already holds it.
  if (head_.next >= h.next) return true;
  // Retention on this broker may have moved first, bytes and segments meanwhile: apply deltas.
  head_.next = h.next;
  head_.bytes += added;
  head_.segments += static_cast<uint32_t>(closed.size());
  head_.last_at = h.last_at;
  head_.active_base = h.active_base;
  head_.active_bytes = h.active_bytes;
  head_.active_min_at = h.active_min_at;
  return true;
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
  auto head = read_head(**lease, false);
  if (!head.ok()) return with_fields(head.status());
  refresh(*head);  // wakes this broker's long polls too
  return bounds();
}

Result<ReadResult> PgPartition::read(Offset from, uint32_t max_records, uint64_t max_bytes) const {
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
        used_any = take_batch_entries(rows->bytes(row, 2), Timestamp{rows->int8(row, 1)}, budget, out) || used_any;
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
  while (records.next(rec)) tail = EntryView{rec.offset, Timestamp{r->int8(0, 0)}, rec.key, rec.payload, rec.headers};
  if (!tail || tail->offset < b.first) return std::optional<ReadResult>();
  ReadResult out;
  out.entries.push_back(*tail);
  out.next_from = tail->offset + 1;
  out.owners.push_back(r->owner());
  return std::optional<ReadResult>(std::move(out));
}

}  // namespace streamd
