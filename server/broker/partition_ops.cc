// The per-partition operations of docs/SEMANTICS.md §2: Read (and its long-poll hook), Bounds, Peek,
// OffsetAt, Trim and Compact. Every error names the stream and partition in its fields.
#include <algorithm>
#include <limits>

#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"

namespace streamd {
Result<Broker::Impl::Target> Broker::Impl::target(const std::string& stream, PartitionId partition) const {
  auto opened = catalog->find(stream);
  if (!opened.ok()) return opened.status();
  EnginePartition* log = (*opened)->stream->partition(partition);
  if (log == nullptr) return unknown_partition(*(*opened)->stream, partition);
  return Target{std::move(opened).value(), log};
}

Result<std::vector<PartitionRead>> Broker::read(const std::string& stream,
                                                const std::vector<ReadCursor>& cursors, int32_t max_records,
                                                uint64_t max_bytes, Isolation isolation,
                                                ReadShape shape) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  if (max_records <= 0) {
    return Status(Code::kInvalidBatchSize, "A read must ask for at least one record",
                  {{"stream", stream}, {"max_records", std::to_string(max_records)}});
  }
  const EngineStream& s = *(*opened)->stream;
  std::vector<PartitionRead> out;
  out.reserve(cursors.size());
  for (const ReadCursor& c : cursors) {
    PartitionRead& pr = out.emplace_back();
    pr.partition = c.partition;
    const EnginePartition* log = s.partition(c.partition);
    if (log == nullptr) {
      pr.status = unknown_partition(s, c.partition);
      pr.result.next_from = c.from;
      continue;
    }
    // The last stable offset before the read: what a transaction commits meanwhile waits for the next.
    // It limits the read only while an open transaction holds it below the end: an engine whose end
    // may lag its storage (bounds_may_lag) then still reads what other brokers appended.
    Offset limit(UINT64_MAX);
    pr.result.next_from = c.from;
    if (isolation == Isolation::kReadCommitted) {
      Offset stable = log->last_stable();
      Bounds bounds = log->bounds();
      if (c.from >= stable && stable < bounds.next && log->bounds_may_lag()) {
        // Held here by a transaction another broker may have ended: the storage's head says, as it
        // does for a read at the end, so a commit acknowledged anywhere is read at once.
        (void)log->fresh_bounds();
        stable = log->last_stable();
        bounds = log->bounds();
      }
      if (stable < bounds.next) limit = stable;
      if (c.from >= limit && check_read_start(bounds, c.from).ok()) continue;  // held by an open transaction
    }
    const uint64_t byte_limit = max_bytes == 0 ? UINT64_MAX : max_bytes;
    auto result = shape == ReadShape::kBatches
                      ? log->read_batches(c.from, static_cast<uint32_t>(max_records), byte_limit)
                      : log->read(c.from, static_cast<uint32_t>(max_records), byte_limit);
    if (!result.ok()) {
      pr.status = with_place(result.status(), stream, c.partition);
      continue;
    }
    pr.result = std::move(result).value();
    if (!any_transactional(pr.result)) continue;
    std::vector<AbortedTxn> aborted;
    if (isolation == Isolation::kReadCommitted) {
      // Taken again: a read past the end this broker held learnt the storage's head on the way
      // (PgPartition::read), whose last stable offset may be below what was read; any last stable
      // offset a partition named bounds what is decided below it.
      limit = log->last_stable();
      auto found = log->aborted_between(c.from, pr.result.next_from);
      if (!found.ok()) {
        pr.status = with_place(found.status(), stream, c.partition);
        pr.result = ReadResult{{}, c.from, {}};
        continue;
      }
      aborted = std::move(found).value();
    }
    apply_isolation(pr.result, c.from, isolation, limit, aborted);
  }
  return out;
}

bool Broker::reads_tail(const std::string& stream, const std::vector<ReadCursor>& cursors) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return true;
  for (const ReadCursor& c : cursors) {
    const EnginePartition* log = (*opened)->stream->partition(c.partition);
    if (log != nullptr && !log->reads_tail(c.from)) return false;
  }
  return true;
}

Result<WatchId> Broker::watch(const std::string& stream, const std::vector<ReadCursor>& cursors,
                              std::function<void()> wake, Isolation isolation) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  const OpenStream& t = **opened;
  std::vector<std::shared_ptr<PartitionWatchers>> partitions;
  std::vector<Offset> froms;
  std::vector<const EnginePartition*> logs;
  for (const ReadCursor& c : cursors) {
    const EnginePartition* log = t.stream->partition(c.partition);
    if (log == nullptr) return unknown_partition(*t.stream, c.partition);
    partitions.push_back(t.watchers[static_cast<size_t>(c.partition.value)]);
    froms.push_back(c.from);
    logs.push_back(log);
  }
  // Held by an open transaction, a read_committed cursor has nothing to read until its marker.
  const bool committed = isolation == Isolation::kReadCommitted;
  return impl_->watches->add(
      partitions, froms,
      [&](size_t i) {
        const Offset next = logs[i]->bounds().next;
        if (next == froms[i]) return false;
        if (!committed || froms[i] > next) return true;  // records to read, or OFFSET_AHEAD to report
        const Offset stable = logs[i]->last_stable();
        return stable >= next || stable > froms[i];
      },
      std::move(wake));
}

void Broker::unwatch(WatchId id) { impl_->watches->remove(id); }

Result<Bounds> Broker::bounds(const std::string& stream, PartitionId partition) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  return t->log->bounds();
}

Result<PartitionEnds> Broker::ends(const std::string& stream, PartitionId partition) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  const Bounds bounds = t->log->bounds();
  return PartitionEnds{bounds, std::min(t->log->last_stable(), bounds.next)};
}

Result<std::optional<ReadResult>> Broker::peek(const std::string& stream, PartitionId partition) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  auto last = t->log->peek();
  if (!last.ok()) return with_place(last.status(), stream, partition);
  return last;
}

Result<Offset> Broker::offset_at(const std::string& stream, PartitionId partition, Timestamp time) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  auto offset = t->log->offset_at(time);
  if (!offset.ok()) return with_place(offset.status(), stream, partition);
  return offset;
}

Result<std::optional<TimedOffset>> Broker::offset_for_time(const std::string& stream, PartitionId partition,
                                                           int64_t millis) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  if (t->opened->stream->policy().timestamp_type == TimestampType::kCreateTime) {
    auto found = t->log->offset_for_create_time(CreateTime(millis));
    if (!found.ok()) return with_place(found.status(), stream, partition);
    return found;
  }
  // LogAppendTime: appended_at, whose milliseconds are at or after `millis` exactly when its
  // microseconds are at or after millis × 1000.
  constexpr int64_t kMaxMillis = std::numeric_limits<int64_t>::max() / 1000;
  if (millis > kMaxMillis) return std::optional<TimedOffset>();
  auto at = t->log->offset_at(Timestamp(std::max<int64_t>(millis, 0) * 1000));
  if (!at.ok()) return with_place(at.status(), stream, partition);
  if (*at == t->log->bounds().next) return std::optional<TimedOffset>();
  // The batch found may start in a compaction hole, or below first: its first record read is the answer
  // (instants never decrease, so every later record qualifies too).
  auto read = t->log->read(*at, 1, UINT64_MAX);
  if (!read.ok()) return with_place(read.status(), stream, partition);
  if (read->entries.empty()) return std::optional<TimedOffset>();
  const EntryView& e = read->entries.front();
  return std::optional<TimedOffset>(TimedOffset{e.offset, e.appended_at.micros / 1000});
}

Result<Policy> Broker::policy(const std::string& stream) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  return (*opened)->stream->policy();
}

Result<Offset> Broker::trim(const std::string& stream, PartitionId partition, Offset before) {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  // An open transaction's records stay until its marker (docs/TRANSACTIONS.md). The last stable offset
  // only moves forward, so what is below it now stays below it.
  if (const Offset stable = t->log->last_stable(); before > stable && before <= t->log->bounds().next) {
    return Status(Code::kInvalidTxnState,
                  "A transaction open on the partition holds the records from its last stable offset on",
                  {{"stream", stream}, {"partition", std::to_string(partition.value)}, {"requested", before.str()},
                   {"last_stable", stable.str()}});
  }
  Status trimmed = t->log->trim(before);
  if (!trimmed.ok()) return with_place(std::move(trimmed), stream, partition);
  t->opened->room_freed();
  return t->log->bounds().first;
}

Result<CompactResult> Broker::compact(const std::string& stream, PartitionId partition) {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  return impl_->compact(*t->opened, partition);
}

Result<CompactResult> Broker::Impl::compact(const OpenStream& opened, PartitionId partition) {
  EnginePartition* log = opened.stream->partition(partition);
  std::lock_guard one_at_a_time(*opened.compaction_mu[static_cast<size_t>(partition.value)]);
  auto stats = log->compact(opened.stream->policy().compact_after, clock.now());
  if (!stats.ok()) return with_place(stats.status(), opened.name(), partition);
  if (stats->segments_rewritten > 0) opened.room_freed();
  return CompactResult{stats->scanned, stats->kept, stats->dropped};
}

}  // namespace streamd
