// PgPartition::write_markers_in (pg_partition.h): a transaction's end writes a marker on every partition
// it touched, inside the coordinator's database transaction (PgTxnStore). Each partition's markers are an
// idempotent span (pg_partition_producers.cc); the spans share their two round trips, so an end costs
// two round trips whatever its number of partitions, where one after another each took two.
#include <deque>

#include "server/broker/pg/pg_partition.h"
#include "server/storage/txn_marker.h"

namespace streamd {

Result<std::vector<std::function<void()>>> PgPartition::write_markers_in(const std::vector<MarkersOf>& partitions) {
  std::vector<std::function<void()>> after;
  if (partitions.empty()) return after;
  auto lease = partitions.front().partition->pool_.acquire();  // the caller's, pinned: its transaction
  if (!lease.ok()) return lease.status();
  PgConnection& conn = **lease;
  struct Written {
    std::vector<Pending> group;
    std::vector<AppendRange> ranges;
    std::optional<IdempotentSpan> span;
  };
  std::deque<Written> spans;  // where the statements point: never moved
  std::vector<PgStatement> locks;
  for (const MarkersOf& of : partitions) {
    Written& w = spans.emplace_back();
    for (const Marker& m : of.markers) {
      w.group.push_back({build_txn_marker(m.producer.id, m.producer.epoch,
                                          m.commit ? MarkerType::kCommit : MarkerType::kAbort, 0),
                         [](const Result<AppendRange>&) {}, std::nullopt});
    }
    w.span.emplace(w.group, 0, w.group.size(), w.ranges);
    // In the order given, as every broker's ends lock shared head rows alike.
    for (const PgStatement& st : of.partition->lock_statements(*w.span)) locks.push_back(st);
  }
  auto locked = conn.pipeline("write markers", locks, PgPipelineEnd::kSync);
  if (!locked.ok()) return locked.status();
  std::vector<PgStatement> writes;
  std::vector<size_t> first_answer(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    IdempotentSpan& span = *spans[i].span;
    if (Status s = partitions[i].partition->took_lock(span, (*locked)[2 * i], (*locked)[2 * i + 1]); !s.ok()) {
      return s.with("stream", partitions[i].stream);
    }
    first_answer[i] = writes.size();
    for (const PgStatement& st : write_statements(span)) writes.push_back(st);
  }
  std::vector<PgResult> answers;
  if (!writes.empty()) {
    auto written = conn.pipeline("write markers", writes, PgPipelineEnd::kSync);
    if (!written.ok()) return written.status();
    answers = std::move(written).value();
  }
  for (size_t i = 0; i < partitions.size(); ++i) {
    PgPartition* partition = partitions[i].partition;
    IdempotentSpan& span = *spans[i].span;
    // Refused INVALID_TXN_STATE: the partition holds no open transaction of the producer, so its marker
    // was written before.
    for (const Pending& p : spans[i].group) {
      if (p.answer && !p.answer->ok() && p.answer->status().code() != Code::kInvalidTxnState) {
        return Status(p.answer->status()).with("stream", partitions[i].stream);
      }
    }
    if (!span.append) continue;
    if (Status s = partition->took_writes(span, answers, first_answer[i]); !s.ok()) {
      return s.with("stream", partitions[i].stream);
    }
    after.push_back([partition, written = *span.done] { partition->took_appended(written); });
  }
  return after;
}

}  // namespace streamd
