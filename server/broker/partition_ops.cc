// The per-partition operations of docs/SEMANTICS.md §2: Read (and its long-poll hook), Bounds, Peek,
// OffsetAt, Trim and Compact. Every error names the stream and partition in its fields.
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

Result<std::vector<PartitionRead>> Broker::read(const std::string& stream, const std::vector<ReadCursor>& cursors,
                                                int32_t max_records, uint64_t max_bytes) const {
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
    auto result = log->read(c.from, static_cast<uint32_t>(max_records), max_bytes == 0 ? UINT64_MAX : max_bytes);
    if (!result.ok()) {
      pr.status = with_place(result.status(), stream, c.partition);
      pr.result.next_from = c.from;
      continue;
    }
    pr.result = std::move(result).value();
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
                              std::function<void()> wake) {
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
  return impl_->watches->add(
      partitions, froms, [&](size_t i) { return logs[i]->bounds().next != froms[i]; }, std::move(wake));
}

void Broker::unwatch(WatchId id) { impl_->watches->remove(id); }

Result<Bounds> Broker::bounds(const std::string& stream, PartitionId partition) const {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
  return t->log->bounds();
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

Result<Offset> Broker::trim(const std::string& stream, PartitionId partition, Offset before) {
  auto t = impl_->target(stream, partition);
  if (!t.ok()) return t.status();
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
