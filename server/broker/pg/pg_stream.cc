#include "server/broker/pg/pg_stream.h"

#include <utility>

namespace streamd {
namespace {

// A commit's upsert: this, the rows' VALUES, then kOnConflict.
constexpr const char* kUpsertOffsets =
    "INSERT INTO streamd_group_offsets (stream_id, group_name, part, next_offset, metadata) VALUES ";
constexpr const char* kOnConflict =
    " ON CONFLICT (stream_id, group_name, part) DO UPDATE SET next_offset = EXCLUDED.next_offset, "
    "metadata = EXCLUDED.metadata";

}  // namespace

PgStream::PgStream(PgPool& pool, PgNotifier& notifier, int64_t id, std::string name, const Policy& policy,
                   Timestamp created_at, std::string meta, Executor& executor, Executor& flushes,
                   const Clock& clock, const std::vector<PgHead>& heads, const PgAppendSettings& settings)
    : pool_(pool),
      notifier_(notifier),
      id_(id),
      name_(std::move(name)),
      policy_(policy),
      created_at_(created_at),
      meta_(std::move(meta)),
      commits_(executor, Status(Code::kUnavailable, "The stream is closed", {{"stream", name_}}),
               [this](std::vector<Commit>& group) { write(group); }) {
  for (int32_t p = 0; p < policy.partitions; ++p) {
    partitions_.push_back(std::make_unique<PgPartition>(pool_, notifier_, id_, p, name_ + "/" + std::to_string(p),
                                                        static_cast<uint64_t>(policy.segment_bytes), flushes,
                                                        clock, heads[static_cast<size_t>(p)], settings));
  }
}

PgStream::~PgStream() { close(); }

void PgStream::close() {
  for (auto& p : partitions_) p->close();
  commits_.close();
}

void PgStream::set_policy(const Policy& policy, std::string meta) {
  {
    std::lock_guard lock(meta_mu_);
    meta_ = std::move(meta);
    policy_.set(policy);
  }
  for (auto& p : partitions_) p->set_segment_bytes(static_cast<uint64_t>(policy.segment_bytes));
}

bool PgStream::has_meta(std::string_view meta) const {
  std::lock_guard lock(meta_mu_);
  return meta_ == meta;
}

EnginePartition* PgStream::partition(PartitionId p) const {
  if (p.value < 0 || p.value >= partition_count()) return nullptr;
  return partitions_[static_cast<size_t>(p.value)].get();
}

uint64_t PgStream::size_bytes() const {
  uint64_t total = 0;
  for (const auto& p : partitions_) total += p->size_bytes();
  return total;
}

void PgStream::commit(std::string group, PartitionId partition, Offset next, std::string metadata,
                      std::function<void(Status)> done) {
  commits_.submit(Commit{std::move(group), partition, next, std::move(metadata), false, std::move(done)});
}

void PgStream::forget(std::string group, PartitionId partition, std::function<void(Status)> done) {
  commits_.submit(Commit{std::move(group), partition, Offset(0), std::string(), true, std::move(done)});
}

void PgStream::write(std::vector<Commit>& group) {
  // One row per (group, partition): an upsert may not touch a row twice, and the last commit (or
  // forget, nullopt) wins.
  std::map<Key, std::optional<Kept>> last;
  for (Commit& c : group) {
    last.insert_or_assign({c.group, c.partition.value},
                          c.forget ? std::nullopt : std::optional<Kept>(Kept{c.next, std::move(c.metadata)}));
  }
  Status status;
  auto lease = pool_.acquire();
  if (lease.ok()) {
    PgParams params;
    params.int8(id_);
    std::string sql = kUpsertOffsets;
    int n = 2;
    std::vector<const Key*> forgotten;
    for (const auto& [key, kept] : last) {
      if (!kept) {
        forgotten.push_back(&key);
        continue;
      }
      params.text(key.first).int4(key.second).int8(static_cast<int64_t>(kept->first.value)).bytea(kept->second);
      sql += n == 2 ? "" : ", ";
      sql += "($1, $" + std::to_string(n) + ", $" + std::to_string(n + 1) + ", $" + std::to_string(n + 2) + ", $" +
             std::to_string(n + 3) + ")";
      n += 4;
    }
    sql += kOnConflict;
    if (forgotten.empty()) {
      status = (*lease)->exec("commit", sql, params).status();
    } else {
      // Forgets are rare (Kafka's DeleteGroups and OffsetDelete): a statement each, with the upsert, in
      // one transaction.
      status = (*lease)->transaction("commit", [&]() -> Status {
        if (n > 2) STREAMD_RETURN_IF_ERROR((*lease)->exec("commit", sql, params).status());
        for (const Key* key : forgotten) {
          PgParams one;
          one.int8(id_).text(key->first).int4(key->second);
          STREAMD_RETURN_IF_ERROR((*lease)
                                      ->exec("commit",
                                             "DELETE FROM streamd_group_offsets WHERE stream_id = $1 AND "
                                             "group_name = $2 AND part = $3",
                                             one)
                                      .status());
        }
        return Status();
      });
    }
  } else {
    status = lease.status();
  }
  if (status.ok()) {
    took_commits(last);
  } else {
    status.with("stream", name_);
  }
  for (Commit& c : group) c.done(status);
}

Status PgStream::commit_in(const TxnOffset& o) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  PgParams params;
  params.int8(id_).text(o.group).int4(o.at.partition).int8(static_cast<int64_t>(o.next.value)).bytea(o.metadata);
  return (*lease)->exec("commit", std::string(kUpsertOffsets) + "($1, $2, $3, $4, $5)" + kOnConflict, params).status();
}

void PgStream::took_commit(const TxnOffset& o) {
  std::map<Key, std::optional<Kept>> kept;
  kept.emplace(Key{o.group, o.at.partition}, Kept{o.next, o.metadata});
  took_commits(kept);
}

void PgStream::took_commits(std::map<Key, std::optional<Kept>>& last) {
  {
    std::unique_lock lock(offsets_mu_);
    for (auto& [key, kept] : last) {
      if (kept) {
        offsets_.insert_or_assign(key, std::move(*kept));
      } else {
        offsets_.erase(key);
      }
    }
    ++generation_;
  }
  notifier_.signal();
}

uint64_t PgStream::commit_generation() const {
  std::shared_lock lock(offsets_mu_);
  return generation_;
}

void PgStream::refresh_offsets(const std::vector<CommittedOffset>& offsets, uint64_t generation) {
  std::unique_lock lock(offsets_mu_);
  if (generation != generation_) return;
  // The read holds every row of the stream: a row gone from it was forgotten.
  offsets_.clear();
  for (const CommittedOffset& o : offsets) offsets_.insert_or_assign({o.group, o.partition.value}, Kept{o.next, o.metadata});
}

std::optional<CommittedOffset> PgStream::committed(const std::string& group, PartitionId partition) const {
  std::shared_lock lock(offsets_mu_);
  auto it = offsets_.find({group, partition.value});
  if (it == offsets_.end()) return std::nullopt;
  return CommittedOffset{group, partition, it->second.first, it->second.second};
}

std::vector<CommittedOffset> PgStream::groups() const {
  std::shared_lock lock(offsets_mu_);
  std::vector<CommittedOffset> out;
  out.reserve(offsets_.size());
  for (const auto& [key, kept] : offsets_) out.push_back({key.first, PartitionId(key.second), kept.first, kept.second});
  return out;
}

}  // namespace streamd
