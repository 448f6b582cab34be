#include "server/broker/broker.h"

#include <spdlog/spdlog.h>

#include "server/broker/broker_impl.h"
#include "server/broker/retention.h"
#include "server/storage/stream_name.h"

namespace streamd {

Status with_place(Status status, const std::string& stream, PartitionId partition) {
  return std::move(status).with("stream", stream).with("partition", std::to_string(partition.value));
}

void OpenStream::shut(const Status& status) const {
  if (backpressure) backpressure->shut(status);
  for (const auto& w : watchers) w->wake_all();
}

std::shared_ptr<OpenStream> Broker::Impl::open_stream(std::shared_ptr<Stream> stream) {
  auto opened = std::make_shared<OpenStream>();
  opened->stream = std::move(stream);
  const Policy& policy = opened->stream->policy();
  if (policy.max_bytes > 0) {
    std::weak_ptr<Stream> weak = opened->stream;
    opened->backpressure = std::make_shared<Backpressure>(
        opened->stream->name(), static_cast<uint64_t>(policy.max_bytes), policy.block_timeout, scheduler, [weak] {
          auto s = weak.lock();
          return s ? s->size_bytes() : uint64_t{0};
        });
  }
  for (int32_t p = 0; p < opened->stream->partition_count(); ++p) {
    auto watchers = std::make_shared<PartitionWatchers>();
    opened->stream->partition(PartitionId(p))->set_commit_listener([watchers](Offset next) {
      watchers->committed(next);
    });
    opened->watchers.push_back(std::move(watchers));
    opened->compaction_mu.push_back(std::make_unique<std::mutex>());
  }
  return opened;
}

Result<std::shared_ptr<OpenStream>> Broker::Impl::find(const std::string& name) const {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::shared_lock lock(streams_mu);
  auto it = streams.find(name);
  if (it == streams.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  return it->second;
}

Result<std::shared_ptr<OpenStream>> Broker::Impl::find_or_create(const std::string& name) {
  std::lock_guard admin(admin_mu);
  if (auto opened = find(name); opened.ok() || opened.status().code() != Code::kStreamNotFound) return opened;
  auto stream = store->create(name, options.default_policy);
  if (!stream.ok()) return stream.status();
  auto opened = open_stream(std::move(stream).value());
  std::unique_lock lock(streams_mu);
  streams.emplace(name, opened);
  spdlog::info("stream {} created on first append", name);
  return opened;
}

std::vector<std::shared_ptr<OpenStream>> Broker::Impl::all_streams() const {
  std::shared_lock lock(streams_mu);
  std::vector<std::shared_ptr<OpenStream>> out;
  out.reserve(streams.size());
  for (const auto& [name, opened] : streams) out.push_back(opened);
  return out;
}

Status Broker::Impl::retention_pass() {
  Status first_error;
  for (const auto& opened : all_streams()) {
    auto dropped = streamd::apply_retention(*opened->stream, clock.now());
    if (!dropped.ok()) {
      spdlog::error("retention of stream {}: {}", opened->name(), dropped.status().to_string());
      if (first_error.ok()) first_error = dropped.status();
      continue;
    }
    if (*dropped > 0) opened->room_freed();
  }
  return first_error;
}

void Broker::Impl::compaction_pass() {
  for (const auto& opened : all_streams()) {
    if (opened->stream->policy().compact_after.count() <= 0) continue;
    for (int32_t p = 0; p < opened->stream->partition_count(); ++p) {
      auto result = compact(*opened, PartitionId(p));
      if (!result.ok()) spdlog::error("compaction of stream {}: {}", opened->name(), result.status().to_string());
    }
  }
}

Broker::Broker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Broker::~Broker() { close(); }

Result<std::unique_ptr<Broker>> Broker::open(FileSystem& fs, std::string data_dir, BrokerOptions options,
                                             Executor& storage, const Clock& clock, Scheduler& scheduler) {
  auto impl = std::make_unique<Impl>(fs, std::move(options), storage, clock, scheduler);
  if (Status policy = impl->options.default_policy.validate(); !policy.ok()) {
    return std::move(policy).with("policy", "default");
  }
  StreamStoreOptions store_options;
  store_options.partition = impl->options.partition_options;
  auto store = StreamStore::open(fs, data_dir, storage, clock, store_options);
  if (!store.ok()) return store.status();
  impl->store = std::move(store).value();
  for (auto& stream : impl->store->list()) {
    std::string name = stream->name();
    impl->streams.emplace(std::move(name), impl->open_stream(std::move(stream)));
  }
  Impl* raw = impl.get();
  if (impl->options.retention_check_period.count() > 0) {
    impl->retention_task = std::make_unique<PeriodicTask>(scheduler, storage, impl->options.retention_check_period,
                                                          [raw] { (void)raw->retention_pass(); });
    impl->retention_task->start();
  }
  if (impl->options.compaction_period.count() > 0) {
    impl->compaction_task = std::make_unique<PeriodicTask>(scheduler, storage, impl->options.compaction_period,
                                                           [raw] { raw->compaction_pass(); });
    impl->compaction_task->start();
  }
  return std::unique_ptr<Broker>(new Broker(std::move(impl)));
}

Result<StreamDescription> Broker::create_stream(const std::string& name, const Policy& policy, bool if_not_exists,
                                                bool* created) {
  if (created != nullptr) *created = false;
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  STREAMD_RETURN_IF_ERROR(policy.validate());
  {
    std::lock_guard admin(impl_->admin_mu);
    if (impl_->find(name).ok()) {
      if (!if_not_exists) return Status::of(Code::kStreamExists, {{"stream", name}});
    } else {
      auto stream = impl_->store->create(name, policy);
      if (!stream.ok()) return stream.status();
      auto opened = impl_->open_stream(std::move(stream).value());
      std::unique_lock lock(impl_->streams_mu);
      impl_->streams.emplace(name, std::move(opened));
      if (created != nullptr) *created = true;
    }
  }
  return describe_stream(name);
}

Status Broker::delete_stream(const std::string& name, bool if_exists, bool* deleted) {
  if (deleted != nullptr) *deleted = false;
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::lock_guard admin(impl_->admin_mu);
  std::shared_ptr<OpenStream> opened;
  {
    std::unique_lock lock(impl_->streams_mu);
    auto it = impl_->streams.find(name);
    if (it == impl_->streams.end()) {
      return if_exists ? Status() : Status::of(Code::kStreamNotFound, {{"stream", name}});
    }
    opened = std::move(it->second);
    impl_->streams.erase(it);
  }
  opened->shut(Status::of(Code::kStreamNotFound, {{"stream", name}}));
  Status removed = impl_->store->remove(name);
  if (!removed.ok()) {
    // The store put the stream back when nothing changed on disk; serve it again.
    if (auto stream = impl_->store->find(name); stream.ok()) {
      std::unique_lock lock(impl_->streams_mu);
      impl_->streams.emplace(name, impl_->open_stream(std::move(stream).value()));
    }
    return removed;
  }
  if (deleted != nullptr) *deleted = true;
  return Status();
}

std::vector<StreamSummary> Broker::list_streams() const {
  std::vector<StreamSummary> out;
  for (const auto& opened : impl_->all_streams()) out.push_back({opened->name(), opened->stream->partition_count()});
  return out;
}

Result<StreamDescription> Broker::describe_stream(const std::string& name) const {
  auto opened = impl_->find(name);
  if (!opened.ok()) return opened.status();
  const Stream& stream = *(*opened)->stream;
  StreamDescription d;
  d.name = stream.name();
  d.policy = stream.policy();
  d.created_at = stream.created_at();
  for (int32_t p = 0; p < stream.partition_count(); ++p) {
    const PartitionLog* log = stream.partition(PartitionId(p));
    d.partitions.push_back({PartitionId(p), log->bounds(), log->size_bytes(),
                            static_cast<uint32_t>(log->segments().size())});
  }
  return d;
}

size_t Broker::stream_count() const {
  std::shared_lock lock(impl_->streams_mu);
  return impl_->streams.size();
}

Status Broker::apply_retention() { return impl_->retention_pass(); }

void Broker::close() {
  if (!impl_ || impl_->gate->closed()) return;
  if (impl_->retention_task) impl_->retention_task->stop();
  if (impl_->compaction_task) impl_->compaction_task->stop();
  impl_->gate->close();
  std::lock_guard admin(impl_->admin_mu);
  std::map<std::string, std::shared_ptr<OpenStream>> streams;
  {
    std::unique_lock lock(impl_->streams_mu);
    streams.swap(impl_->streams);
  }
  const Status closing(Code::kUnavailable, "The broker is shutting down");
  for (const auto& [name, opened] : streams) opened->shut(closing);
  impl_->store->close();
}

}  // namespace streamd
