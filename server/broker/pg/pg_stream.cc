#include "server/broker/pg/pg_stream.h"

#include <utility>

namespace streamd {

PgStream::PgStream(PgPool& pool, PgNotifier& notifier, int64_t id, std::string name, const Policy& policy,
                   Timestamp created_at, Executor& executor, const Clock& clock, const std::vector<PgHead>& heads)
    : pool_(pool),
      notifier_(notifier),
      id_(id),
      name_(std::move(name)),
      policy_(policy),
      created_at_(created_at),
      commits_(executor, Status(Code::kUnavailable, "The stream is closed", {{"stream", name_}}),
               [this](std::vector<Commit>& group) { write(group); }) {
  for (int32_t p = 0; p < policy_.partitions; ++p) {
    partitions_.push_back(std::make_unique<PgPartition>(pool_, notifier_, id_, p, name_ + "/" + std::to_string(p),
                                                        static_cast<uint64_t>(policy_.segment_bytes), executor,
                                                        clock, heads[static_cast<size_t>(p)]));
  }
}

PgStream::~PgStream() { close(); }

void PgStream::close() {
  for (auto& p : partitions_) p->close();
  commits_.close();
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

void PgStream::commit(std::string group, PartitionId partition, Offset next, std::function<void(Status)> done) {
  commits_.submit(Commit{std::move(group), partition, next, std::move(done)});
}

void PgStream::write(std::vector<Commit>& group) {
  // One row per (group, partition): an upsert may not touch a row twice, and the last commit wins.
  std::map<std::pair<std::string, int32_t>, Offset> last;
  for (const Commit& c : group) last.insert_or_assign({c.group, c.partition.value}, c.next);
  Status status;
  auto lease = pool_.acquire();
  if (lease.ok()) {
    PgParams params;
    params.int8(id_);
    std::string sql = "INSERT INTO streamd_group_offsets (stream_id, group_name, part, next_offset) VALUES ";
    int n = 2;
    bool first = true;
    for (const auto& [key, next] : last) {
      params.text(key.first).int4(key.second).int8(static_cast<int64_t>(next.value));
      sql += first ? "" : ", ";
      sql += "($1, $" + std::to_string(n) + ", $" + std::to_string(n + 1) + ", $" + std::to_string(n + 2) + ")";
      n += 3;
      first = false;
    }
    sql += " ON CONFLICT (stream_id, group_name, part) DO UPDATE SET next_offset = EXCLUDED.next_offset";
    status = (*lease)->exec("commit", sql, params).status();
  } else {
    status = lease.status();
  }
  if (status.ok()) {
    std::unique_lock lock(offsets_mu_);
    for (const auto& [key, next] : last) offsets_.insert_or_assign(key, next);
    ++generation_;
    notifier_.signal();
  } else {
    status.with("stream", name_);
  }
  for (Commit& c : group) c.done(status);
}

uint64_t PgStream::commit_generation() const {
  std::shared_lock lock(offsets_mu_);
  return generation_;
}

void PgStream::refresh_offsets(const std::vector<CommittedOffset>& offsets, uint64_t generation) {
  std::unique_lock lock(offsets_mu_);
  if (generation != generation_) return;
  for (const CommittedOffset& o : offsets) offsets_.insert_or_assign({o.group, o.partition.value}, o.next);
}

std::optional<Offset> PgStream::committed(const std::string& group, PartitionId partition) const {
  std::shared_lock lock(offsets_mu_);
  auto it = offsets_.find({group, partition.value});
  if (it == offsets_.end()) return std::nullopt;
  return it->second;
}

std::vector<CommittedOffset> PgStream::groups() const {
  std::shared_lock lock(offsets_mu_);
  std::vector<CommittedOffset> out;
  out.reserve(offsets_.size());
  for (const auto& [key, next] : offsets_) out.push_back({key.first, PartitionId(key.second), next});
  return out;
}

}  // namespace streamd
