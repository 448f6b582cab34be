// PgPartition's trim, retention and compaction: the SegmentedLog operations over streamd_segments and
// streamd_batches. Each change is one transaction that locks the partition's head row, so it
// serialises with appends (which hold that row while they insert) and with the same change on another
// broker; retention and compaction passes also take the partition's advisory lock, so one broker at a
// time runs them.
//
// A compaction's rewrite of a closed segment is the long one (its batches deleted and written again),
// and appends never touch closed segments: it locks that segment's row instead, and the head row only
// for its last statement, so appends to the partition wait for at most that statement and its COMMIT.
// Whatever locks both locks the segment rows first (trim, retention, a stream's delete), so no two
// transactions wait for each other.
#include <algorithm>
#include <utility>

#include "server/broker/compaction.h"
#include "server/broker/pg/pg_partition.h"
#include "server/broker/retention.h"

namespace streamd {
namespace {

// pg_try_advisory_lock(int, int) keys: this class of lock, and the partition (stream id and partition
// folded into one int, so collisions cost a skipped pass, never a wrong one).
constexpr int32_t kMaintenanceLockClass = 0x73746d61;  // "stma"

// A rewrite's INSERT carries at most this many batches, or about this many bytes.
constexpr size_t kRewriteRowsPerStatement = 1000;
constexpr uint64_t kRewriteBytesPerStatement = 32ull << 20;

int32_t fold(int64_t stream_id, int32_t part) {
  return static_cast<int32_t>(static_cast<uint32_t>(stream_id * 1000003 + part) & 0x7fffffff);
}

}  // namespace

// A closed segment's replacement, collected in memory and swapped in by one transaction.
class PgPartition::Rewrite final : public SegmentRewrite {
 public:
  Rewrite(PgPartition& log, Offset base) : log_(log), base_(base) {}
  Status add(std::string_view batch) override {
    batches_.emplace_back(batch);
    return Status();
  }
  Status commit() override { return log_.replace_segment(base_, batches_); }

 private:
  PgPartition& log_;
  const Offset base_;
  std::vector<std::string> batches_;
};

Status PgPartition::no_closed_segment(Offset base) const {
  return Status(Code::kStreamBackendFailed, "no closed segment has this base offset",
                {{"path", name_}, {"base", base.str()}});
}

Status PgPartition::lock_segments(PgConnection& conn, std::optional<Offset> upto) const {
  PgParams params;
  params.int8(stream_id_).int4(part_);
  std::string sql = "SELECT end_offset FROM streamd_segments WHERE stream_id = $1 AND part = $2";
  if (upto) {
    params.int8(static_cast<int64_t>(upto->value));
    sql += " AND end_offset <= $3";
  }
  return conn.exec("lock segments", sql + " FOR UPDATE", params).status();
}

Result<std::vector<SegmentInfo>> PgPartition::segments_of(PgConnection& conn, const PgHead& head) const {
  PgParams params;
  params.int8(stream_id_).int4(part_);
  auto r = conn.exec("list segments",
                     "SELECT base_offset, end_offset, bytes, min_at, max_at FROM streamd_segments "
                     "WHERE stream_id = $1 AND part = $2 ORDER BY end_offset",
                     params);
  if (!r.ok()) return r.status();
  std::vector<SegmentInfo> out;
  out.reserve(static_cast<size_t>(r->rows()) + 1);
  for (int i = 0; i < r->rows(); ++i) {
    out.push_back({Offset(static_cast<uint64_t>(r->int8(i, 0))), Offset(static_cast<uint64_t>(r->int8(i, 1))),
                   static_cast<uint64_t>(r->int8(i, 2)), Timestamp{r->int8(i, 3)}, Timestamp{r->int8(i, 4)}, false});
  }
  SegmentInfo active{head.active_base, head.next, head.active_bytes, Timestamp(), Timestamp(), true};
  if (head.active_bytes > 0) {
    active.min_appended_at = head.active_min_at;
    active.max_appended_at = head.last_at;
  }
  out.push_back(active);
  return out;
}

std::vector<SegmentInfo> PgPartition::segments() const {
  auto lease = pool_.acquire();
  if (!lease.ok()) return {};
  PgHead head;
  {
    std::lock_guard lock(mu_);
    head = head_;
  }
  auto fresh = read_head(**lease, false);
  if (fresh.ok()) head = *fresh;
  auto segments = segments_of(**lease, head);
  // A pass that cannot see the segments does nothing this time; its writes report their own errors.
  return segments.ok() ? std::move(segments).value() : std::vector<SegmentInfo>();
}

Status PgPartition::drop_front_locked(PgConnection& conn, PgHead& head, const std::vector<SegmentInfo>& dropped,
                                      Offset first) {
  uint64_t freed = 0;
  for (const SegmentInfo& s : dropped) freed += s.bytes;
  const Offset cut = dropped.empty() ? Offset(0) : dropped.back().end;
  if (!dropped.empty()) {
    PgParams params;
    params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(cut.value));
    STREAMD_RETURN_IF_ERROR(
        conn.exec("drop segments",
                  "DELETE FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND end_offset <= $3", params)
            .status());
    STREAMD_RETURN_IF_ERROR(
        conn.exec("drop segments",
                  "DELETE FROM streamd_segments WHERE stream_id = $1 AND part = $2 AND end_offset <= $3", params)
            .status());
  }
  head.first = std::max({head.first, first, dropped.empty() ? head.first : cut});
  head.bytes -= std::min(head.bytes, freed);
  head.segments -= static_cast<uint32_t>(dropped.size());
  {
    // An aborted transaction whose marker is gone has no records left for readers to skip.
    PgParams params;
    params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(head.first.value));
    STREAMD_RETURN_IF_ERROR(conn.exec("drop segments",
                                      "DELETE FROM streamd_aborted_txns WHERE stream_id = $1 AND part = $2 AND "
                                      "marker_offset < $3",
                                      params)
                                .status());
  }
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(head.first.value));
  params.int8(static_cast<int64_t>(head.bytes)).int4(static_cast<int32_t>(head.segments));
  return conn
      .exec("drop segments",
            "UPDATE streamd_heads SET first_offset = $3, bytes = $4, segments = $5 WHERE stream_id = $1 AND part = $2",
            params)
      .status();
}

Status PgPartition::trim(Offset before) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgConnection& conn = **lease;
  PgHead head;
  Status s = conn.transaction("trim", [&]() -> Status {
    STREAMD_RETURN_IF_ERROR(lock_segments(conn, before));
    auto locked = read_head(conn, true);
    if (!locked.ok()) return locked.status();
    head = *locked;
    if (before > head.next) {
      return Status::of(Code::kOffsetAhead, {{"requested", before.str()}, {"next", head.next.str()}});
    }
    if (before <= head.first) return Status();
    auto segments = segments_of(conn, head);
    if (!segments.ok()) return segments.status();
    std::vector<SegmentInfo> dropped;
    for (const SegmentInfo& seg : *segments) {
      if (seg.active || seg.end > before) break;
      dropped.push_back(seg);
    }
    return drop_front_locked(conn, head, dropped, before);
  });
  if (s.code() == Code::kOffsetAhead) return s;
  if (!s.ok()) return with_fields(s);
  apply_maintenance(head);
  return Status();
}

Status PgPartition::drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgConnection& conn = **lease;
  PgHead head;
  Status s = conn.transaction("drop segments", [&]() -> Status {
    STREAMD_RETURN_IF_ERROR(lock_segments(conn, std::nullopt));
    auto locked = read_head(conn, true);
    if (!locked.ok()) return locked.status();
    head = *locked;
    auto segments = segments_of(conn, head);
    if (!segments.ok()) return segments.status();
    std::vector<SegmentInfo> dropped;
    for (const SegmentInfo& seg : *segments) {
      if (seg.active || !drop(seg)) break;
      dropped.push_back(seg);
    }
    if (dropped.empty()) return Status();
    return drop_front_locked(conn, head, dropped, head.first);
  });
  if (!s.ok()) return with_fields(s);
  apply_maintenance(head);
  return Status();
}

Status PgPartition::roll_active_if(const std::function<bool(const SegmentInfo&)>& roll) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgConnection& conn = **lease;
  PgHead head;
  Status s = conn.transaction("roll segment", [&]() -> Status {
    auto locked = read_head(conn, true);
    if (!locked.ok()) return locked.status();
    head = *locked;
    if (head.active_bytes == 0) return Status();
    const SegmentInfo active{head.active_base, head.next, head.active_bytes, head.active_min_at, head.last_at, true};
    if (!roll(active)) return Status();
    PgParams params;
    params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(head.next.value));
    params.int8(static_cast<int64_t>(head.active_base.value)).int8(static_cast<int64_t>(head.active_bytes));
    params.int8(head.active_min_at.micros).int8(head.last_at.micros);
    STREAMD_RETURN_IF_ERROR(conn.exec("roll segment",
                                      "INSERT INTO streamd_segments (stream_id, part, end_offset, base_offset, bytes, "
                                      "min_at, max_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                                      params)
                                .status());
    head.active_base = head.next;
    head.active_bytes = 0;
    ++head.segments;
    PgParams update;
    update.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(head.next.value));
    return conn
        .exec("roll segment",
              "UPDATE streamd_heads SET active_base = $3, active_bytes = 0, segments = segments + 1 "
              "WHERE stream_id = $1 AND part = $2",
              update)
        .status();
  });
  if (!s.ok()) return with_fields(s);
  apply_maintenance(head);
  return Status();
}

Status PgPartition::scan_segment(Offset base, const BatchVisitor& visit) const {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams params;
  params.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(base.value));
  auto segment = (*lease)->exec(
      "scan segment",
      "SELECT end_offset FROM streamd_segments WHERE stream_id = $1 AND part = $2 AND base_offset = $3", params);
  if (!segment.ok()) return with_fields(segment.status());
  if (segment->rows() == 0) return no_closed_segment(base);
  PgParams rows;
  rows.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(base.value)).int8(segment->int8(0, 0));
  auto batches = (*lease)->exec("scan segment",
                                "SELECT data FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
                                "end_offset > $3 AND end_offset <= $4 ORDER BY end_offset",
                                rows);
  if (!batches.ok()) return with_fields(batches.status());
  for (int i = 0; i < batches->rows(); ++i) {
    const std::string_view batch = batches->bytes(i, 0);
    if (!visit(peek_header(batch), batch)) break;
  }
  return Status();
}

Result<std::unique_ptr<SegmentRewrite>> PgPartition::rewrite_segment(Offset base) {
  return std::unique_ptr<SegmentRewrite>(std::make_unique<Rewrite>(*this, base));
}

Status PgPartition::replace_segment(Offset base, const std::vector<std::string>& batches) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgConnection& conn = **lease;
  PgHead head;
  Status s = conn.transaction("rewrite segment", [&]() -> Status {
    // The segment's row, not the head's: a trim or retention dropping it meanwhile waits, or went first.
    PgParams find;
    find.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(base.value));
    auto segment = conn.exec("rewrite segment",
                             "SELECT end_offset, bytes FROM streamd_segments WHERE stream_id = $1 AND part = $2 AND "
                             "base_offset = $3 FOR UPDATE",
                             find);
    if (!segment.ok()) return segment.status();
    if (segment->rows() == 0) return no_closed_segment(base);
    const int64_t end = segment->int8(0, 0);
    const uint64_t old_bytes = static_cast<uint64_t>(segment->int8(0, 1));
    PgParams range;
    range.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(base.value)).int8(end);
    STREAMD_RETURN_IF_ERROR(conn.exec("rewrite segment",
                                      "DELETE FROM streamd_batches WHERE stream_id = $1 AND part = $2 AND "
                                      "end_offset > $3 AND end_offset <= $4",
                                      range)
                                .status());
    uint64_t bytes = 0;
    // Offsets are never renumbered: each batch keeps its base, range and instant. Many rows a statement.
    for (size_t begin = 0; begin < batches.size();) {
      PgParams rows;
      rows.int8(stream_id_).int4(part_);
      std::string sql =
          "INSERT INTO streamd_batches (stream_id, part, end_offset, base_offset, appended_at, records, "
          "data, max_ts) "
          "SELECT $1, $2, v.e, v.b, v.t, v.r, v.d, v.m FROM (VALUES ";
      int n = 3;
      uint64_t statement_bytes = 0;
      size_t i = begin;
      for (; i < batches.size() && i - begin < kRewriteRowsPerStatement &&
             (i == begin || statement_bytes < kRewriteBytesPerStatement);
           ++i) {
        const BatchHeader h = peek_header(batches[i]);
        rows.int8(static_cast<int64_t>(h.end_offset().value)).int8(static_cast<int64_t>(h.base_offset.value));
        rows.int8(h.appended_at.micros).int4(static_cast<int32_t>(h.record_count)).bytea(batches[i]);
        rows.int8(h.max_record_millis());
        if (i > begin) sql += ", ";
        sql += "(";
        for (int k = 0; k < 6; ++k) sql += (k > 0 ? ", $" : "$") + std::to_string(n++);
        sql += ")";
        statement_bytes += batches[i].size();
      }
      sql += ") AS v(e, b, t, r, d, m)";
      STREAMD_RETURN_IF_ERROR(conn.exec("rewrite segment", sql, rows).status());
      bytes += statement_bytes;
      begin = i;
    }
    PgParams seg;
    seg.int8(stream_id_).int4(part_).int8(end).int8(static_cast<int64_t>(bytes));
    STREAMD_RETURN_IF_ERROR(
        conn.exec("rewrite segment",
                  "UPDATE streamd_segments SET bytes = $4 WHERE stream_id = $1 AND part = $2 AND end_offset = $3", seg)
            .status());
    // Last: from here to the COMMIT appends to the partition wait.
    PgParams update;
    update.int8(stream_id_).int4(part_).int8(static_cast<int64_t>(old_bytes)).int8(static_cast<int64_t>(bytes));
    auto after = conn.exec("rewrite segment",
                           std::string("UPDATE streamd_heads SET bytes = GREATEST(bytes - $3, 0) + $4 "
                                       "WHERE stream_id = $1 AND part = $2 RETURNING ") +
                               kPgHeadColumns,
                           update);
    if (!after.ok()) return after.status();
    if (after->rows() == 0) return read_head(conn, false).status();  // the stream is gone: says so
    head = pg_head_from(*after, 0, 0);
    return Status();
  });
  if (!s.ok()) return with_fields(s);
  apply_maintenance(head);
  return Status();
}

template <typename Pass>
Result<bool> PgPartition::with_maintenance_lock(Pass&& pass) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return with_fields(lease.status());
  PgParams key;
  key.int4(kMaintenanceLockClass).int4(fold(stream_id_, part_));
  auto locked = (*lease)->exec("maintenance lock", "SELECT pg_try_advisory_lock($1, $2)::int", key);
  if (!locked.ok()) return with_fields(locked.status());
  if (locked->int4(0, 0) == 0) return false;  // another broker runs this partition's pass
  Status s;
  {
    // The pass's own calls run on this connection, which holds the lock.
    PgPool::Pin pin(*lease);
    s = pass();
  }
  if (!(*lease)->broken()) (void)(*lease)->exec("maintenance lock", "SELECT pg_advisory_unlock($1, $2)", key);
  if (!s.ok()) return s;
  return true;
}

Result<uint64_t> PgPartition::apply_retention(const Policy& policy, Timestamp now) {
  uint64_t dropped = 0;
  auto ran = with_maintenance_lock([&]() -> Status {
    auto r = apply_segment_retention(*this, policy, now);
    if (!r.ok()) return r.status();
    dropped = *r;
    auto lease = pool_.acquire();  // the pinned connection, holding the lock
    if (!lease.ok()) return lease.status();
    return expire_producers(**lease, now);
  });
  if (!ran.ok()) return ran.status();
  return dropped;
}

Result<CompactionStats> PgPartition::compact(std::chrono::milliseconds compact_after, Timestamp now) {
  CompactionStats stats;
  auto ran = with_maintenance_lock([&]() -> Status {
    auto r = compact_segments(*this, compact_after, now);
    if (!r.ok()) return r.status();
    stats = *r;
    return Status();
  });
  if (!ran.ok()) return ran.status();
  return stats;
}

}  // namespace streamd
