#include "server/broker/file_engine.h"

#include <utility>
#include <vector>

#include "server/broker/compaction.h"
#include "server/broker/retention.h"
#include "server/storage/create_time_lookup.h"

namespace streamd {
namespace {

class FilePartition final : public EnginePartition {
 public:
  explicit FilePartition(PartitionSlot& log) : log_(log) {}

  void append(std::string batch, AppendDone done) override { log_.append(std::move(batch), std::move(done)); }
  void set_commit_listener(CommitListener listener) override {
    log_.set_commit_listener(std::move(listener));
  }
  Result<ReadResult> read(Offset from, uint32_t max_records, uint64_t max_bytes) const override {
    return log_.read(from, max_records, max_bytes);
  }
  Result<ReadResult> read_batches(Offset from, uint32_t max_records, uint64_t max_bytes) const override {
    return log_.read(from, max_records, max_bytes, ReadShape::kBatches);
  }
  bool reads_tail(Offset from) const override { return log_.reads_tail(from); }
  Bounds bounds() const override { return log_.bounds(); }
  Result<Offset> offset_at(Timestamp t) const override { return log_.offset_at(t); }
  Result<std::optional<TimedOffset>> offset_for_create_time(CreateTime t) const override {
    return create_times_.find(log_, t);
  }
  Result<std::optional<ReadResult>> peek() const override { return log_.peek(); }
  Offset last_stable() const override { return log_.last_stable(); }
  Result<std::vector<AbortedTxn>> aborted_between(Offset from, Offset to) const override {
    return log_.aborted_between(from, to);
  }
  Result<std::vector<ProducerIdentity>> open_producers() const override { return log_.open_producers(); }
  Status trim(Offset before) override { return log_.trim(before); }
  Result<uint64_t> apply_retention(const Policy& policy, Timestamp now) override {
    log_.expire_producers(now);
    return apply_segment_retention(log_, policy, now);
  }
  Result<CompactionStats> compact(std::chrono::milliseconds compact_after, Timestamp now) override {
    return compact_segments(log_, compact_after, now);
  }
  uint64_t size_bytes() const override { return log_.size_bytes(); }
  uint32_t segment_count() const override { return static_cast<uint32_t>(log_.segments().size()); }
  bool failed() const override { return log_.failed(); }

 private:
  PartitionSlot& log_;
  mutable CreateTimeLookup create_times_;
};

class FileStream final : public EngineStream {
 public:
  explicit FileStream(std::shared_ptr<Stream> stream) : stream_(std::move(stream)) {
    for (int32_t p = 0; p < stream_->partition_count(); ++p) {
      partitions_.push_back(std::make_unique<FilePartition>(*stream_->partition(PartitionId(p))));
    }
  }

  const std::string& name() const override { return stream_->name(); }
  Policy policy() const override { return stream_->policy(); }
  Timestamp created_at() const override { return stream_->created_at(); }
  int32_t partition_count() const override { return stream_->partition_count(); }
  EnginePartition* partition(PartitionId p) const override {
    if (p.value < 0 || p.value >= partition_count()) return nullptr;
    return partitions_[static_cast<size_t>(p.value)].get();
  }
  uint64_t size_bytes() const override { return stream_->size_bytes(); }

  void commit(std::string group, PartitionId partition, Offset next, std::string metadata,
              std::function<void(Status)> done) override {
    stream_->groups().commit(std::move(group), partition, next, std::move(metadata), std::move(done));
  }
  void forget(std::string group, PartitionId partition, std::function<void(Status)> done) override {
    stream_->groups().forget(std::move(group), partition, std::move(done));
  }
  std::optional<CommittedOffset> committed(const std::string& group, PartitionId partition) const override {
    auto e = stream_->groups().find(group, partition);
    if (!e) return std::nullopt;
    return CommittedOffset{std::move(e->group), e->partition, e->next, std::move(e->metadata)};
  }
  std::vector<CommittedOffset> groups() const override {
    std::vector<CommittedOffset> out;
    for (GroupOffsets::Entry& e : stream_->groups().list())
      out.push_back({std::move(e.group), e.partition, e.next, std::move(e.metadata)});
    return out;
  }

 private:
  std::shared_ptr<Stream> stream_;
  std::vector<std::unique_ptr<FilePartition>> partitions_;
};

std::shared_ptr<EngineStream> wrap(std::shared_ptr<Stream> stream) {
  return std::make_shared<FileStream>(std::move(stream));
}

}  // namespace

Result<std::unique_ptr<FileEngine>> FileEngine::open(FileSystem& fs, const std::string& data_dir,
                                                     Executor& storage, const Clock& clock,
                                                     const PartitionOptions& partition_options,
                                                     uint64_t max_open_files, uint64_t journal_file_bytes,
                                                     ProducerBounds producers) {
  StreamStoreOptions options;
  options.partition = partition_options;
  options.max_open_files = max_open_files;
  options.journal = partition_options.journal_group_bytes > 0;
  options.journal_options.file_bytes = journal_file_bytes;
  options.producers = producers;
  auto store = StreamStore::open(fs, data_dir, storage, clock, options);
  if (!store.ok()) return store.status();
  // After the store: its lock on the data directory is held.
  auto txns = TxnLog::open(fs, data_dir, storage);
  if (!txns.ok()) return txns.status();
  return std::unique_ptr<FileEngine>(new FileEngine(std::move(store).value(), std::move(txns).value()));
}

uint64_t FileEngine::size_bytes() const {
  uint64_t total = 0;
  for (const auto& stream : store_->list()) total += stream->size_bytes();
  return total;
}

Result<std::shared_ptr<EngineStream>> FileEngine::create(const std::string& name, const Policy& policy) {
  auto stream = store_->create(name, policy);
  if (!stream.ok()) return stream.status();
  return wrap(std::move(stream).value());
}

Status FileEngine::remove(const std::string& name) {
  return store_->remove(name);
}

Result<Policy> FileEngine::alter(const std::string& name, const PolicyEdit& edit) {
  return store_->alter(name, edit);
}

Result<std::shared_ptr<EngineStream>> FileEngine::find(const std::string& name) const {
  auto stream = store_->find(name);
  if (!stream.ok()) return stream.status();
  return wrap(std::move(stream).value());
}

std::vector<std::shared_ptr<EngineStream>> FileEngine::list() const {
  std::vector<std::shared_ptr<EngineStream>> out;
  for (auto& stream : store_->list()) out.push_back(wrap(std::move(stream)));
  return out;
}

void FileEngine::close() {
  txns_->close();
  store_->close();
}

Result<ProducerIdentity> FileEngine::init_producer(std::optional<ProducerIdentity> current) {
  if (current) {
    if (auto bumped = next_epoch(*current)) return *bumped;
  }
  auto id = store_->next_producer_id();
  if (!id.ok()) return id.status();
  return ProducerIdentity{*id, 0};
}

}  // namespace streamd
