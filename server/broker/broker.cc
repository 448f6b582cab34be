#include "server/broker/broker.h"

#include <spdlog/spdlog.h>

#include "server/broker/broker_impl.h"
#include "server/broker/retention.h"
#include "server/storage/stream_name.h"

namespace streamd {

Status with_place(Status status, const std::string& stream, PartitionId partition) {
  return std::move(status).with("stream", stream).with("partition", std::to_string(partition.value));
}

void Topic::shut(const Status& status) const {
  if (backpressure) backpressure->shut(status);
  for (const auto& w : watchers) w->wake_all();
}

std::shared_ptr<Topic> Broker::Impl::make_topic(std::shared_ptr<Stream> stream) {
  auto topic = std::make_shared<Topic>();
  topic->stream = std::move(stream);
  const Policy& policy = topic->stream->policy();
  if (policy.max_bytes > 0) {
    std::weak_ptr<Stream> weak = topic->stream;
    topic->backpressure = std::make_shared<Backpressure>(
        topic->stream->name(), static_cast<uint64_t>(policy.max_bytes), policy.block_timeout, scheduler, [weak] {
          auto s = weak.lock();
          return s ? s->size_bytes() : uint64_t{0};
        });
  }
  for (int32_t p = 0; p < topic->stream->partition_count(); ++p) {
    auto watchers = std::make_shared<PartitionWatchers>();
    topic->stream->partition(PartitionId(p))->set_commit_listener([watchers](Offset next) {
      watchers->committed(next);
    });
    topic->watchers.push_back(std::move(watchers));
    topic->compaction_mu.push_back(std::make_unique<std::mutex>());
  }
  return topic;
}

Result<std::shared_ptr<Topic>> Broker::Impl::find(const std::string& name) const {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::shared_lock lock(topics_mu);
  auto it = topics.find(name);
  if (it == topics.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  return it->second;
}

Result<std::shared_ptr<Topic>> Broker::Impl::find_or_create(const std::string& name) {
  std::lock_guard admin(admin_mu);
  if (auto topic = find(name); topic.ok() || topic.status().code() != Code::kStreamNotFound) return topic;
  auto stream = store->create(name, options.default_policy);
  if (!stream.ok()) return stream.status();
  auto topic = make_topic(std::move(stream).value());
  std::unique_lock lock(topics_mu);
  topics.emplace(name, topic);
  spdlog::info("stream {} created on first append", name);
  return topic;
}

std::vector<std::shared_ptr<Topic>> Broker::Impl::all_topics() const {
  std::shared_lock lock(topics_mu);
  std::vector<std::shared_ptr<Topic>> out;
  out.reserve(topics.size());
  for (const auto& [name, topic] : topics) out.push_back(topic);
  return out;
}

Status Broker::Impl::retention_pass() {
  Status first_error;
  for (const auto& topic : all_topics()) {
    auto dropped = streamd::apply_retention(*topic->stream, clock.now());
    if (!dropped.ok()) {
      spdlog::error("retention of stream {}: {}", topic->name(), dropped.status().to_string());
      if (first_error.ok()) first_error = dropped.status();
      continue;
    }
    if (*dropped > 0) topic->room_freed();
  }
  return first_error;
}

void Broker::Impl::compaction_pass() {
  for (const auto& topic : all_topics()) {
    if (topic->stream->policy().compact_after.count() <= 0) continue;
    for (int32_t p = 0; p < topic->stream->partition_count(); ++p) {
      auto result = compact(*topic, PartitionId(p));
      if (!result.ok()) spdlog::error("compaction of stream {}: {}", topic->name(), result.status().to_string());
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
    impl->topics.emplace(std::move(name), impl->make_topic(std::move(stream)));
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
      auto topic = impl_->make_topic(std::move(stream).value());
      std::unique_lock lock(impl_->topics_mu);
      impl_->topics.emplace(name, std::move(topic));
      if (created != nullptr) *created = true;
    }
  }
  return describe_stream(name);
}

Status Broker::delete_stream(const std::string& name, bool if_exists, bool* deleted) {
  if (deleted != nullptr) *deleted = false;
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::lock_guard admin(impl_->admin_mu);
  std::shared_ptr<Topic> topic;
  {
    std::unique_lock lock(impl_->topics_mu);
    auto it = impl_->topics.find(name);
    if (it == impl_->topics.end()) {
      return if_exists ? Status() : Status::of(Code::kStreamNotFound, {{"stream", name}});
    }
    topic = std::move(it->second);
    impl_->topics.erase(it);
  }
  topic->shut(Status::of(Code::kStreamNotFound, {{"stream", name}}));
  Status removed = impl_->store->remove(name);
  if (!removed.ok()) {
    // The store put the stream back when nothing changed on disk; serve it again.
    if (auto stream = impl_->store->find(name); stream.ok()) {
      std::unique_lock lock(impl_->topics_mu);
      impl_->topics.emplace(name, impl_->make_topic(std::move(stream).value()));
    }
    return removed;
  }
  if (deleted != nullptr) *deleted = true;
  return Status();
}

std::vector<StreamSummary> Broker::list_streams() const {
  std::vector<StreamSummary> out;
  for (const auto& topic : impl_->all_topics()) out.push_back({topic->name(), topic->stream->partition_count()});
  return out;
}

Result<StreamDescription> Broker::describe_stream(const std::string& name) const {
  auto topic = impl_->find(name);
  if (!topic.ok()) return topic.status();
  const Stream& stream = *(*topic)->stream;
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
  std::shared_lock lock(impl_->topics_mu);
  return impl_->topics.size();
}

Status Broker::apply_retention() { return impl_->retention_pass(); }

void Broker::close() {
  if (!impl_ || impl_->gate->closed()) return;
  if (impl_->retention_task) impl_->retention_task->stop();
  if (impl_->compaction_task) impl_->compaction_task->stop();
  impl_->gate->close();
  std::lock_guard admin(impl_->admin_mu);
  std::map<std::string, std::shared_ptr<Topic>> topics;
  {
    std::unique_lock lock(impl_->topics_mu);
    topics.swap(impl_->topics);
  }
  const Status closing(Code::kUnavailable, "The broker is shutting down");
  for (const auto& [name, topic] : topics) topic->shut(closing);
  impl_->store->close();
}

}  // namespace streamd
