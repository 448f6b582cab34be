#include "server/broker/memory/memory_engine.h"

#include <shared_mutex>
#include <utility>

#include "server/broker/memory/memory_partition.h"
#include "server/storage/group_commit.h"
#include "server/storage/shared_policy.h"

namespace streamd {

// A stream of the memory engine: its partitions and its group offsets.
class MemoryStream final : public EngineStream {
 public:
  MemoryStream(std::string name, const Policy& policy, Timestamp created_at, Executor& executor, const Clock& clock,
               const std::shared_ptr<std::atomic<uint64_t>>& held, const std::shared_ptr<ProducerLimits>& producers)
      : name_(std::move(name)),
        policy_(policy),
        created_at_(created_at),
        commits_(executor, Status(Code::kUnavailable, "The stream is closed", {{"stream", name_}}),
                 [this](std::vector<Commit>& group) { apply(group); }) {
    for (int32_t p = 0; p < policy.partitions; ++p) {
      partitions_.push_back(std::make_unique<MemoryPartition>(name_ + "/" + std::to_string(p),
                                                              static_cast<uint64_t>(policy.segment_bytes), executor,
                                                              clock, held, producers));
    }
  }
  ~MemoryStream() override { close(); }
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;

  const std::string& name() const override { return name_; }
  Policy policy() const override { return policy_.get(); }
  // MemoryEngine::alter's: same partition count.
  void set_policy(const Policy& policy) {
    policy_.set(policy);
    for (auto& p : partitions_) p->set_segment_bytes(static_cast<uint64_t>(policy.segment_bytes));
  }
  Timestamp created_at() const override { return created_at_; }
  int32_t partition_count() const override { return static_cast<int32_t>(partitions_.size()); }
  EnginePartition* partition(PartitionId p) const override {
    if (p.value < 0 || p.value >= partition_count()) return nullptr;
    return partitions_[static_cast<size_t>(p.value)].get();
  }
  uint64_t size_bytes() const override {
    uint64_t total = 0;
    for (const auto& p : partitions_) total += p->size_bytes();
    return total;
  }

  void commit(std::string group, PartitionId partition, Offset next, std::string metadata,
              std::function<void(Status)> done) override {
    commits_.submit(Commit{std::move(group), partition, next, std::move(metadata), false, std::move(done)});
  }
  void forget(std::string group, PartitionId partition, std::function<void(Status)> done) override {
    commits_.submit(Commit{std::move(group), partition, Offset(0), std::string(), true, std::move(done)});
  }
  std::optional<CommittedOffset> committed(const std::string& group, PartitionId partition) const override {
    std::shared_lock lock(offsets_mu_);
    auto it = offsets_.find({group, partition.value});
    if (it == offsets_.end()) return std::nullopt;
    return CommittedOffset{group, partition, it->second.first, it->second.second};
  }
  std::vector<CommittedOffset> groups() const override {
    std::shared_lock lock(offsets_mu_);
    std::vector<CommittedOffset> out;
    out.reserve(offsets_.size());
    for (const auto& [key, kept] : offsets_) out.push_back({key.first, PartitionId(key.second), kept.first, kept.second});
    return out;
  }

  // Answers what is queued; later appends and commits are refused UNAVAILABLE.
  void close() {
    for (auto& p : partitions_) p->close();
    commits_.close();
  }

 private:
  struct Commit {
    std::string group;
    PartitionId partition;
    Offset next;
    std::string metadata;
    bool forget = false;
    std::function<void(Status)> done;
  };

  // Commits and forgets apply in call order, answered on a storage thread like the file engine's.
  void apply(std::vector<Commit>& group) {
    {
      std::unique_lock lock(offsets_mu_);
      for (Commit& c : group) {
        if (c.forget) {
          offsets_.erase({c.group, c.partition.value});
        } else {
          offsets_.insert_or_assign({c.group, c.partition.value}, std::make_pair(c.next, std::move(c.metadata)));
        }
      }
    }
    for (Commit& c : group) c.done(Status());
  }

  const std::string name_;
  SharedPolicy policy_;
  const Timestamp created_at_;
  std::vector<std::unique_ptr<MemoryPartition>> partitions_;

  mutable std::shared_mutex offsets_mu_;
  std::map<std::pair<std::string, int32_t>, std::pair<Offset, std::string>> offsets_;  // next, metadata
  GroupCommit<Commit> commits_;
};

MemoryEngine::MemoryEngine(uint64_t max_bytes, Executor& executor, const Clock& clock, ProducerBounds producers)
    : max_bytes_(max_bytes),
      executor_(executor),
      clock_(clock),
      producers_(std::make_shared<ProducerLimits>(producers)),
      next_producer_id_((clock.now().micros / 1000) << 16) {}

Result<ProducerIdentity> MemoryEngine::init_producer(std::optional<ProducerIdentity> current) {
  if (current) {
    if (auto bumped = next_epoch(*current)) return *bumped;
  }
  return ProducerIdentity{next_producer_id_++, 0};
}

MemoryEngine::~MemoryEngine() { close(); }

Result<std::shared_ptr<EngineStream>> MemoryEngine::create(const std::string& name, const Policy& policy) {
  std::lock_guard lock(mu_);
  if (streams_.count(name) > 0) return Status::of(Code::kStreamExists, {{"stream", name}});
  auto stream = std::make_shared<MemoryStream>(name, policy.normalized(), clock_.now(), executor_, clock_, held_,
                                               producers_);
  streams_.emplace(name, stream);
  return std::shared_ptr<EngineStream>(std::move(stream));
}

Status MemoryEngine::remove(const std::string& name) {
  std::shared_ptr<MemoryStream> stream;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
    stream = std::move(it->second);
    streams_.erase(it);
  }
  // Its memory goes with the last reader still holding it.
  stream->close();
  return Status();
}

Result<Policy> MemoryEngine::alter(const std::string& name, const PolicyEdit& edit) {
  // Under the engine's lock: one change of a stream at a time, none racing its removal.
  std::lock_guard lock(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  auto edited = edit(it->second->policy());
  if (!edited.ok()) return edited.status();
  const Policy after = edited->normalized();
  it->second->set_policy(after);
  return after;
}

Result<std::shared_ptr<EngineStream>> MemoryEngine::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  return std::shared_ptr<EngineStream>(it->second);
}

std::vector<std::shared_ptr<EngineStream>> MemoryEngine::list() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<EngineStream>> out;
  out.reserve(streams_.size());
  for (const auto& [name, stream] : streams_) out.push_back(stream);
  return out;
}

void MemoryEngine::close() {
  std::map<std::string, std::shared_ptr<MemoryStream>> streams;
  {
    std::lock_guard lock(mu_);
    streams.swap(streams_);
  }
  for (const auto& [name, stream] : streams) stream->close();
}

}  // namespace streamd
