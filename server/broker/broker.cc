#include "server/broker/broker.h"

#include <spdlog/spdlog.h>

#include "server/broker/broker_impl.h"
#include "server/broker/file_engine.h"
#include "server/storage/stream_name.h"

namespace streamd {

Status with_place(Status status, const std::string& stream, PartitionId partition) {
  return std::move(status).with("stream", stream).with("partition", std::to_string(partition.value));
}

Status unknown_partition(const EngineStream& stream, PartitionId partition) {
  return Status::of(Code::kUnknownPartition, {{"stream", stream.name()},
                                              {"partition", std::to_string(partition.value)},
                                              {"partitions", std::to_string(stream.partition_count())}});
}

Status Broker::Impl::retention_pass() {
  Status first_error;
  const Timestamp now = clock.now();
  for (const auto& opened : catalog->all()) {
    const EngineStream& stream = *opened->stream;
    uint64_t dropped = 0;
    for (int32_t p = 0; p < stream.partition_count(); ++p) {
      auto result = stream.partition(PartitionId(p))->apply_retention(stream.policy(), now);
      if (!result.ok()) {
        Status failed = with_place(result.status(), opened->name(), PartitionId(p));
        spdlog::error("retention of stream {}: {}", opened->name(), failed.to_string());
        if (first_error.ok()) first_error = std::move(failed);
        break;
      }
      dropped += *result;
    }
    if (dropped > 0) opened->room_freed();
  }
  return first_error;
}

void Broker::Impl::compaction_pass() {
  for (const auto& opened : catalog->all()) {
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
  // The default policy is refused before the data directory is locked or recovered.
  if (Status policy = options.default_policy.validate(); !policy.ok()) {
    return std::move(policy).with("policy", "default");
  }
  auto engine = FileEngine::open(fs, data_dir, storage, clock, options.partition_options);
  if (!engine.ok()) return engine.status();
  return open(std::move(engine).value(), std::move(options), storage, clock, scheduler);
}

Result<std::unique_ptr<Broker>> Broker::open(std::unique_ptr<StreamEngine> engine, BrokerOptions options,
                                             Executor& storage, const Clock& clock, Scheduler& scheduler) {
  auto impl = std::make_unique<Impl>(std::move(engine), std::move(options), storage, clock, scheduler);
  if (Status policy = impl->options.default_policy.validate(); !policy.ok()) {
    return std::move(policy).with("policy", "default");
  }
  if (impl->options.default_policy.normalized().partitions > impl->options.max_partitions) {
    return Status(Code::kStreamMisconfigured, "partitions: the default policy asks for more than max_partitions",
                  {{"field", "partitions"},
                   {"policy", "default"},
                   {"value", std::to_string(impl->options.default_policy.normalized().partitions)},
                   {"max_partitions", std::to_string(impl->options.max_partitions)}});
  }
  impl->catalog = std::make_unique<StreamCatalog>(*impl->engine, scheduler, impl->options.max_partitions);
  Impl* raw = impl.get();
  Executor* maintenance = impl->options.maintenance;
  const bool periodic = impl->options.retention_check_period.count() > 0 ||
                        impl->options.compaction_period.count() > 0 ||
                        impl->options.transaction_check_period.count() > 0;
  if (maintenance == nullptr && periodic) {
    impl->own_maintenance = std::make_unique<ThreadPool>(1);
    maintenance = impl->own_maintenance.get();
  }
  if (impl->options.retention_check_period.count() > 0) {
    impl->retention_task = std::make_unique<PeriodicTask>(
        scheduler, *maintenance, impl->options.retention_check_period, [raw] { (void)raw->retention_pass(); });
    impl->retention_task->start();
  }
  if (impl->options.compaction_period.count() > 0) {
    impl->compaction_task = std::make_unique<PeriodicTask>(scheduler, *maintenance, impl->options.compaction_period,
                                                           [raw] { raw->compaction_pass(); });
    impl->compaction_task->start();
  }
  impl->open_transactions(maintenance != nullptr ? *maintenance : storage);
  return std::unique_ptr<Broker>(new Broker(std::move(impl)));
}

Result<StreamDescription> Broker::create_stream(const std::string& name, const Policy& policy, bool if_not_exists,
                                                bool* created) {
  if (created != nullptr) *created = false;
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  STREAMD_RETURN_IF_ERROR(policy.validate());
  STREAMD_RETURN_IF_ERROR(impl_->catalog->create(name, policy, if_not_exists, created));
  return describe_stream(name);
}

Result<Policy> Broker::alter_stream(const std::string& name, const PolicyChange& change, bool validate_only) {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  auto in_stream = [&name](Result<Policy> policy) -> Result<Policy> {
    if (!policy.ok()) return Status(policy.status()).with("stream", name);
    return policy;
  };
  if (validate_only) {
    auto opened = impl_->catalog->find(name);
    if (!opened.ok()) return opened.status();
    return in_stream(change.apply_to((*opened)->stream->policy()));
  }
  auto policy = impl_->catalog->alter(name, [&](const Policy& current) { return in_stream(change.apply_to(current)); });
  if (policy.ok()) spdlog::info("stream {}: policy changed", name);
  return policy;
}

Status Broker::delete_stream(const std::string& name, bool if_exists, bool* deleted) {
  if (deleted != nullptr) *deleted = false;
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  return impl_->catalog->remove(name, if_exists, deleted);
}

std::vector<StreamSummary> Broker::list_streams() const {
  std::vector<StreamSummary> out;
  for (const auto& opened : impl_->catalog->all()) out.push_back({opened->name(), opened->stream->partition_count()});
  return out;
}

Result<StreamDescription> Broker::describe_stream(const std::string& name) const {
  auto opened = impl_->catalog->find(name);
  if (!opened.ok()) return opened.status();
  const EngineStream& stream = *(*opened)->stream;
  StreamDescription d;
  d.name = stream.name();
  d.policy = stream.policy();
  d.created_at = stream.created_at();
  const RotationShare share = impl_->engine->rotation_share().over(stream.partition_count());
  for (int32_t p = 0; p < stream.partition_count(); ++p) {
    const EnginePartition* log = stream.partition(PartitionId(p));
    const Bounds bounds = log->bounds();
    d.partitions.push_back({PartitionId(p), bounds, log->size_bytes(), log->segment_count(), log->failed(),
                            std::min(log->last_stable(), bounds.next), share.takes(p)});
  }
  return d;
}

size_t Broker::stream_count() const { return impl_->catalog->size(); }

std::vector<std::string> Broker::unreachable_storage() const { return impl_->engine->unreachable(); }

Status Broker::apply_retention() { return impl_->retention_pass(); }

void Broker::close() {
  if (!impl_ || impl_->gate->closed()) return;
  if (impl_->retention_task) impl_->retention_task->stop();
  if (impl_->compaction_task) impl_->compaction_task->stop();
  if (impl_->txn_task) impl_->txn_task->stop();
  impl_->gate->close();
  impl_->catalog->close(Status(Code::kUnavailable, "The broker is shutting down"));
}

}  // namespace streamd
