// PgPartition's appends (docs/ENGINES.md §"Offsets and the append statement"): a group of batches is
// sealed at the head this broker holds and written by one statement that advances the head only if it
// still says so. While no other broker appends to the partition that is one round trip. Once another
// broker has moved the head under this one, the group is written with the head row locked first
// (BEGIN, SELECT … FOR UPDATE, the statement, COMMIT), and so is every later group until a locked
// read finds that no other broker appended in between: racing brokers then wait for each other's
// commits instead of each writing, failing and rereading in turn.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "server/broker/pg/pg_change_feed.h"
#include "server/broker/pg/pg_partition.h"
#include "server/storage/record_batch.h"

namespace streamd {
namespace {

// One append statement carries at most this many batches, or about this many bytes; a larger group is
// several statements in a row (each one its own commit, in order).
constexpr size_t kRowsPerStatement = 1000;
constexpr uint64_t kBytesPerStatement = 32ull << 20;

}  // namespace

struct PgPartition::ClosedSegment {
  Offset base;
  Offset end;
  uint64_t bytes;
  Timestamp min_at;
  Timestamp max_at;
};

void PgPartition::append_group(std::vector<Pending>& group) {
  std::vector<AppendRange> ranges;  // of the batches written, in order
  ranges.reserve(group.size());
  Status failure;
  for (size_t begin = 0; failure.ok() && begin < group.size();) {
    size_t end = begin;
    uint64_t bytes = 0;
    bool idempotent = false;
    while (end < group.size() && end - begin < kRowsPerStatement && (end == begin || bytes < kBytesPerStatement)) {
      idempotent = idempotent || peek_header(group[end].batch).producer.id >= 0;
      bytes += group[end++].batch.size();
    }
    failure = write_span(group, begin, end, idempotent, ranges);
    begin = end;
  }
  if (!failure.ok()) {
    std::lock_guard lock(mu_);
    head_stale_ = true;  // what the failed statement did is not known here
  }
  PgHead head;
  {
    std::lock_guard lock(mu_);
    head = head_;
  }
  // The written batches' ranges are in order; answered ones (duplicates, refusals) took none.
  size_t written = 0;
  for (Pending& p : group) {
    if (p.answer) continue;
    p.answer = written < ranges.size() ? Result<AppendRange>(ranges[written++]) : with_fields(failure);
  }
  // Before any producer hears of a failure: its batches queued behind are checked against it.
  note_failed_batches(group);
  // Watchers before producers, as on files (server/storage/partition_log.cc).
  if (!ranges.empty()) announce(head);
  for (Pending& p : group) p.done(*p.answer);
}

Status PgPartition::write_span(std::vector<Pending>& group, size_t begin, size_t end, bool idempotent,
                               std::vector<AppendRange>& ranges) {
  const Status first = write_span_once(group, begin, end, idempotent, ranges);
  if (!idempotent || first.ok() || first.field("outcome") != "unknown") return first;
  // Whatever the attempts answer short of writing or recognising the span (no connection yet, a
  // standby not yet promoted refusing writes), the first attempt may have been kept: its unknown
  // outcome stands until one succeeds.
  using Steady = std::chrono::steady_clock;
  const auto deadline = Steady::now() + settings_.resend_unknown_for;
  auto pause = std::chrono::milliseconds(50);
  while (!closing_ && Steady::now() + pause < deadline) {
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    if (write_span_once(group, begin, end, idempotent, ranges).ok()) return Status();
  }
  return first;
}

Status PgPartition::write_span_once(std::vector<Pending>& group, size_t begin, size_t end, bool idempotent,
                                    std::vector<AppendRange>& ranges) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  return idempotent ? append_idempotent(**lease, group, begin, end, ranges)
                    : append_span(**lease, group, begin, end, ranges);
}

Status PgPartition::append_span(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                std::vector<AppendRange>& ranges) {
  // The ranges of a statement that did not write, or whose outcome is unknown, go again.
  const size_t ranges_before = ranges.size();
  bool contended;
  {
    std::lock_guard lock(mu_);
    contended = contended_;
  }
  if (!contended) {
    auto written = append_unlocked(conn, group, begin, end, ranges);
    if (written.ok() && *written) return Status();
    ranges.resize(ranges_before);
    if (!written.ok()) return written.status();
    // Another broker went first: written again with the row locked, where no other can.
  }
  Status s = append_locked(conn, group, begin, end, ranges);
  if (!s.ok()) ranges.resize(ranges_before);
  return s;
}

Result<bool> PgPartition::append_unlocked(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                          std::vector<AppendRange>& ranges) {
  PgHead head;
  bool stale;
  {
    std::lock_guard lock(mu_);
    stale = head_stale_;
    head = head_;
  }
  if (stale) {
    auto fresh = read_head(conn, false);
    if (!fresh.ok()) return fresh.status();
    head = *fresh;
    set_head(head);
  }
  auto written = append_rows(conn, group, begin, end, head, ranges);
  if (!written.ok()) return written.status();
  if (!*written) {
    std::lock_guard lock(mu_);
    contended_ = true;  // another broker moved the head under this one
    return false;
  }
  took_own_append(**written);
  return true;
}

Status PgPartition::append_locked(PgConnection& conn, std::vector<Pending>& group, size_t begin, size_t end,
                                  std::vector<AppendRange>& ranges) {
  // Two round trips of one implicit transaction: the head row locked, then the rows written and
  // committed (pg_connection.h).
  auto head = lock_head(conn);
  if (!head.ok()) return head.status();
  hold_locked_head(*head);
  const RowsStatement statement = rows_statement(group, begin, end, *head, ranges);
  auto r = conn.pipeline("append", {{kRowsStatementName, &rows_sql(), &statement.params}}, PgPipelineEnd::kSync);
  if (!r.ok()) return r.status();
  // Under the row lock the head cannot have moved.
  if ((*r)[0].affected() == 0) {
    return Status(Code::kStreamBackendFailed, "the partition's head row moved while this broker held its lock",
                  {{"path", name_}});
  }
  // The head this broker holds changes only once the commit returned, so bounds() never names offsets
  // that may not exist.
  took_own_append(statement.after);
  return Status();
}

PgPartition::RowsStatement PgPartition::rows_statement(std::vector<Pending>& group, size_t begin, size_t end,
                                                       const PgHead& before, std::vector<AppendRange>& ranges) {
  PgHead h = before;
  // Instants never go backwards along a partition, even when a clock (this broker's or another's) does.
  const Timestamp now = std::max(clock_.now(), h.last_at);
  std::vector<ClosedSegment> closed;
  uint64_t added = 0;
  std::vector<size_t> rows;  // the batches written: those no check answered
  const uint64_t segment_bytes = segment_bytes_.load(std::memory_order_relaxed);
  for (size_t i = begin; i < end; ++i) {
    if (group[i].answer) continue;
    rows.push_back(i);
    std::string& batch = group[i].batch;
    const BatchHeader hdr = peek_header(batch);
    const Offset base = h.next;
    seal_batch(batch, base, now);
    const uint64_t size = batch.size();
    // A segment is rolled before a batch would grow it past segment_bytes, as on files.
    if (h.active_bytes > 0 && h.active_bytes + size > segment_bytes) {
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
  std::vector<int64_t> row_end, row_base, row_max_ts;
  std::vector<int32_t> row_records;
  std::vector<std::string_view> row_data;
  for (size_t n = 0; n < rows.size(); ++n) {
    const size_t i = rows[n];
    const AppendRange& r = ranges[ranges.size() - rows.size() + n];
    const BatchHeader hdr = peek_header(group[i].batch);
    row_end.push_back(static_cast<int64_t>(r.last.value + 1));
    row_base.push_back(static_cast<int64_t>(r.first.value));
    row_records.push_back(static_cast<int32_t>(hdr.record_count));
    row_max_ts.push_back(hdr.max_record_millis());
    row_data.push_back(group[i].batch);
  }
  RowsStatement out{{}, {h, added, static_cast<uint32_t>(closed.size())}};
  PgParams& params = out.params;
  params.int8(stream_id_).int4(part_);
  params.int8(static_cast<int64_t>(h.next.value)).int8(static_cast<int64_t>(added)).int8(now.micros);
  params.int8(static_cast<int64_t>(h.active_base.value)).int8(static_cast<int64_t>(h.active_bytes));
  params.int8(h.active_min_at.micros).int4(static_cast<int32_t>(closed.size()));
  params.int8(static_cast<int64_t>(before.next.value)).int8(static_cast<int64_t>(before.active_base.value));
  params.int8_array(seg_end).int8_array(seg_base).int8_array(seg_bytes).int8_array(seg_min).int8_array(seg_max);
  params.int8_array(row_end).int8_array(row_base).int4_array(row_records).bytea_array(row_data);
  params.int8_array(row_max_ts);
  return out;
}

const std::string& PgPartition::rows_sql() {
  static const std::string sql =
      "WITH h AS (UPDATE streamd_heads SET next_offset = $3, bytes = bytes + $4, last_at = $5, active_base = "
      "$6, "
      "active_bytes = $7, active_min_at = $8, segments = segments + $9 "
      "WHERE stream_id = $1 AND part = $2 AND next_offset = $10 AND active_base = $11 RETURNING stream_id, "
      "part), "
      // The segments this group closed (mostly none: a data-modifying CTE runs even when unreferenced).
      "s AS (INSERT INTO streamd_segments (stream_id, part, end_offset, base_offset, bytes, min_at, max_at) "
      "SELECT h.stream_id, h.part, v.e, v.b, v.n, v.lo, v.hi FROM h, unnest($12, $13, $14, $15, $16) "
      "AS v(e, b, n, lo, hi)) "
      "INSERT INTO streamd_batches (stream_id, part, end_offset, base_offset, appended_at, records, data, "
      "max_ts) "
      "SELECT h.stream_id, h.part, v.e, v.b, $5, v.r, v.d, v.m FROM h, unnest($17, $18, $19, $20, $21) "
      "AS v(e, b, r, d, m)";
  return sql;
}

Result<std::optional<PgPartition::OwnAppend>> PgPartition::append_rows(PgConnection& conn, std::vector<Pending>& group,
                                                                      size_t begin, size_t end, const PgHead& before,
                                                                      std::vector<AppendRange>& ranges) {
  RowsStatement statement = rows_statement(group, begin, end, before, ranges);
  auto r = conn.exec_prepared("append", kRowsStatementName, rows_sql(), statement.params);
  if (!r.ok()) return r.status();
  if (r->affected() == 0) return std::optional<OwnAppend>();
  return std::optional<OwnAppend>(statement.after);
}

void PgPartition::announce(const PgHead& head) {
  notifier_.signal_head(stream_id_, part_, pg_changes::head_item(stream_id_, part_, head));  // others' long polls
  notify_listener(head.next);
}

void PgPartition::took_appended(const OwnAppend& a) {
  took_own_append(a);
  PgHead head;
  {
    std::lock_guard lock(mu_);
    head = head_;
  }
  announce(head);
}

void PgPartition::took_own_append(const OwnAppend& a) {
  std::lock_guard lock(mu_);
  own_next_ = a.head.next;
  // A refresh that read the row after this commit already holds it.
  if (head_.next >= a.head.next) return;
  // Retention on this broker may have moved first, bytes and segments meanwhile: apply deltas.
  head_.next = a.head.next;
  head_.bytes += a.added;
  head_.segments += a.closed;
  head_.last_at = a.head.last_at;
  head_.active_base = a.head.active_base;
  head_.active_bytes = a.head.active_bytes;
  head_.active_min_at = a.head.active_min_at;
  head_.first_open = a.head.first_open;
}

}  // namespace streamd
