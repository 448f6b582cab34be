// The Committer operations of docs/SEMANTICS.md §2: Commit, Committed and ListGroups, over the stream's
// group offsets, which its engine keeps; and the Kafka listener's own commits (store_offset, which
// never checks the log, as Kafka's OffsetCommit does not) and their removal (forget_offset).
#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"
#include "server/storage/group_offsets.h"

namespace streamd {
namespace {

Status check_group(const std::string& stream, const std::string& group) {
  if (group.empty()) {
    return Status(Code::kStreamMisconfigured, "A consumer group needs a name",
                  {{"stream", stream}, {"field", "group"}, {"reason", "empty"}});
  }
  if (group.size() > kMaxGroupNameBytes) {
    return Status(Code::kStreamMisconfigured, "The consumer group name is too long",
                  {{"stream", stream},
                   {"field", "group"},
                   {"reason", "longer than " + std::to_string(kMaxGroupNameBytes) + " bytes"},
                   {"length", std::to_string(group.size())}});
  }
  return Status();
}

Status offset_ahead(const std::string& stream, const std::string& group, PartitionId partition, Offset next,
                    Offset end) {
  return Status::of(Code::kOffsetAhead, {{"stream", stream},
                                         {"partition", std::to_string(partition.value)},
                                         {"group", group},
                                         {"requested", next.str()},
                                         {"next", end.str()}});
}

}  // namespace

void Broker::commit(const std::string& stream, const std::string& group, PartitionId partition, Offset next,
                    std::function<void(Status)> done) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  if (Status checked = check_group(stream, group); !checked.ok()) return done(std::move(checked));
  const EngineStream& s = *(*opened)->stream;
  const EnginePartition* log = s.partition(partition);
  if (log == nullptr) return done(unknown_partition(s, partition));
  auto keep = [stream, partition, opened = *opened](std::string g, Offset n, std::function<void(Status)> d) {
    opened->stream->commit(std::move(g), partition, n, std::string(), [stream, partition, d = std::move(d)](Status status) {
      if (!status.ok()) return d(with_place(std::move(status), stream, partition));
      d(Status());
    });
  };
  const Offset end = log->bounds().next;
  if (next <= end) return keep(group, next, std::move(done));
  if (!log->bounds_may_lag()) return done(offset_ahead(stream, group, partition, next, end));
  // Past the end this broker knows; another broker sharing the engine may have appended meanwhile. The
  // storage decides, off the caller's thread (fresh_bounds may block).
  if (!impl_->gate->enter()) return done(Status(Code::kUnavailable, "The broker is shutting down"));
  impl_->storage.post([gate = impl_->gate, log, stream, group, partition, next, keep = std::move(keep),
                       done = std::move(done)]() mutable {
    auto fresh = log->fresh_bounds();
    if (!fresh.ok()) {
      done(with_place(fresh.status(), stream, partition));
    } else if (next > fresh->next) {
      done(offset_ahead(stream, group, partition, next, fresh->next));
    } else {
      keep(group, next, std::move(done));
    }
    gate->leave();
  });
}

Result<Offset> Broker::committed(const std::string& stream, const std::string& group, PartitionId partition) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  STREAMD_RETURN_IF_ERROR(check_group(stream, group));
  const EngineStream& s = *(*opened)->stream;
  if (s.partition(partition) == nullptr) return unknown_partition(s, partition);
  auto offset = s.committed(group, partition);
  if (!offset) {
    return Status::of(Code::kUnknownGroup,
                      {{"stream", stream}, {"group", group}, {"partition", std::to_string(partition.value)}});
  }
  return offset->next;
}

void Broker::store_offset(const std::string& stream, const std::string& group, PartitionId partition, Offset next,
                          std::string metadata, std::function<void(Status)> done) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  if (Status checked = check_group(stream, group); !checked.ok()) return done(std::move(checked));
  if (metadata.size() > kMaxCommitMetadataBytes) {
    return done(Status(Code::kStreamMisconfigured, "The commit's metadata is too long",
                       {{"stream", stream},
                        {"field", "metadata"},
                        {"reason", "longer than " + std::to_string(kMaxCommitMetadataBytes) + " bytes"},
                        {"length", std::to_string(metadata.size())}}));
  }
  const EngineStream& s = *(*opened)->stream;
  if (s.partition(partition) == nullptr) return done(unknown_partition(s, partition));
  (*opened)->stream->commit(group, partition, next, std::move(metadata),
                            [stream, partition, done = std::move(done)](Status status) {
                              if (!status.ok()) return done(with_place(std::move(status), stream, partition));
                              done(Status());
                            });
}

void Broker::forget_offset(const std::string& stream, const std::string& group, PartitionId partition,
                           std::function<void(Status)> done) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  if (Status checked = check_group(stream, group); !checked.ok()) return done(std::move(checked));
  const EngineStream& s = *(*opened)->stream;
  if (s.partition(partition) == nullptr) return done(unknown_partition(s, partition));
  (*opened)->stream->forget(group, partition, [stream, partition, done = std::move(done)](Status status) {
    if (!status.ok()) return done(with_place(std::move(status), stream, partition));
    done(Status());
  });
}

Result<std::optional<GroupOffset>> Broker::commit_of(const std::string& stream, const std::string& group,
                                                     PartitionId partition) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  STREAMD_RETURN_IF_ERROR(check_group(stream, group));
  const EngineStream& s = *(*opened)->stream;
  const EnginePartition* log = s.partition(partition);
  if (log == nullptr) return unknown_partition(s, partition);
  auto kept = s.committed(group, partition);
  if (!kept) return std::optional<GroupOffset>();
  const Offset next = log->bounds().next;
  return std::optional<GroupOffset>(
      GroupOffset{group, partition, kept->next, next, next > kept->next ? next - kept->next : 0, kept->metadata});
}

Result<std::vector<GroupOffset>> Broker::list_groups(const std::string& stream) const {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return opened.status();
  const EngineStream& s = *(*opened)->stream;
  std::vector<GroupOffset> out;
  for (const CommittedOffset& e : s.groups()) {
    const EnginePartition* log = s.partition(e.partition);
    if (log == nullptr) continue;
    const Offset next = log->bounds().next;
    out.push_back({e.group, e.partition, e.next, next, next > e.next ? next - e.next : 0, e.metadata});
  }
  return out;
}

}  // namespace streamd
