// Broker::append: routing (routing.h), backpressure (backpressure.h), then the engine partition's
// append. Auto-create, which touches the disk, runs on the storage executor so append never blocks.
#include <memory>

#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"
#include "server/broker/routing.h"
#include "server/storage/batch_builder.h"

namespace streamd {

// Owned copies of a batch's records, for work that outlives the caller's views.
struct OwnedBatch {
  std::vector<std::string> keys, payloads;
  std::vector<std::vector<std::pair<std::string, std::string>>> headers;

  explicit OwnedBatch(const std::vector<RecordInput>& records) {
    for (const RecordInput& r : records) {
      keys.emplace_back(r.key);
      payloads.emplace_back(r.payload);
      auto& hs = headers.emplace_back();
      for (const HeaderView& h : r.headers) hs.emplace_back(h.name, h.value);
    }
  }
  std::vector<RecordInput> views() const {
    std::vector<RecordInput> out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      out[i].key = keys[i];
      out[i].payload = payloads[i];
      for (const auto& [name, value] : headers[i]) out[i].headers.push_back({name, value});
    }
    return out;
  }
};

namespace {

// Where a batch goes: the partition an idempotent producer names (checked), or routing's choice.
Result<PartitionId> place(const std::string& stream, const std::vector<RecordInput>& records,
                          const AppendOptions& options, int32_t partitions, int64_t max_record_bytes,
                          std::atomic<uint64_t>& rotation, RotationShare share = {}) {
  if (!options.partition) return route_batch(stream, records, partitions, max_record_bytes, rotation, share);
  if (Status placed = check_placed_batch(stream, records, *options.partition, partitions, max_record_bytes,
                                         /*enforce_placement=*/true);
      !placed.ok()) {
    return placed;
  }
  return *options.partition;
}

// Appends a batch backpressure has admitted; its bytes are released once the partition answers.
void write_admitted(const std::shared_ptr<OpenStream>& opened, PartitionId p, std::string batch,
                    std::function<void(Result<AppendResult>)> done) {
  const uint64_t bytes = batch.size();
  opened->stream->partition(p)->append(
      std::move(batch), [opened, p, bytes, done = std::move(done)](Result<AppendRange> range) {
        opened->backpressure->release(bytes);
        if (!range.ok()) return done(with_place(range.status(), opened->name(), p));
        done(AppendResult{p, *range});
      });
}

}  // namespace

void Broker::append(const std::string& stream, const std::vector<RecordInput>& records, const AppendOptions& options,
                    std::function<void(Result<AppendResult>)> done) {
  Impl* impl = impl_.get();
  // While a stream is being auto-created, later appends to it queue behind the creation.
  if (impl->creating.any() && impl->creating.join(stream, [&] {
        return PendingCreations::Append{std::make_shared<const OwnedBatch>(records), std::move(done), options};
      })) {
    return;
  }
  auto opened = impl->catalog->find(stream);
  if (opened.ok()) return impl->append_to(*opened, records, options, std::move(done));
  if (opened.status().code() != Code::kStreamNotFound || !impl->options.auto_create_streams) {
    return done(opened.status());
  }
  // A batch the new stream would refuse must not create it: a refused request changes nothing.
  const Policy policy = impl->options.default_policy.normalized();
  std::atomic<uint64_t> unused_rotation{0};
  if (auto routed = place(stream, records, options, policy.partitions, policy.max_record_bytes, unused_rotation);
      !routed.ok()) {
    return done(routed.status());
  }
  if (!impl->gate->enter()) return done(Status(Code::kUnavailable, "The broker is shutting down"));
  if (!impl->creating.begin(stream, {std::make_shared<const OwnedBatch>(records), std::move(done), options})) {
    impl->gate->leave();  // another append already started the creation
    return;
  }
  impl->storage.post([impl, stream] {
    auto created = impl->catalog->find_or_create(stream, impl->options.default_policy);
    // Queued appends go to the partition logs in call order before the queue closes; one arriving
    // meanwhile waits for the queue's lock, then finds the stream and goes after them.
    impl->creating.finish(stream, [&](PendingCreations::Append& queued) {
      if (created.ok()) {
        impl->append_to(*created, queued.batch->views(), queued.options, std::move(queued.done));
      } else {
        queued.done(created.status());
      }
    });
    impl->gate->leave();
  });
}

void Broker::Impl::append_to(const std::shared_ptr<OpenStream>& opened, const std::vector<RecordInput>& records,
                             const AppendOptions& append_options, std::function<void(Result<AppendResult>)> done) {
  const EngineStream& stream = *opened->stream;
  const Policy& policy = stream.policy();
  auto partition = place(stream.name(), records, append_options, stream.partition_count(), policy.max_record_bytes,
                         opened->rotation, engine->rotation_share());
  if (!partition.ok()) return done(partition.status());
  write_batch(opened, *partition, records, append_options.producer, std::move(done));
}

void Broker::append_to_partition(const std::string& stream, PartitionId partition, bool enforce_placement,
                                 const std::vector<RecordInput>& records,
                                 std::function<void(Result<AppendResult>)> done) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  const EngineStream& s = *(*opened)->stream;
  if (Status placed = check_placed_batch(s.name(), records, partition, s.partition_count(),
                                         s.policy().max_record_bytes, enforce_placement);
      !placed.ok()) {
    return done(std::move(placed));
  }
  impl_->write_batch(*opened, partition, records, ProducerFields{}, std::move(done));
}

void Broker::append_batch_to_partition(const std::string& stream, PartitionId partition,
                                       bool enforce_placement, const std::vector<RecordInput>& records,
                                       std::string batch, std::function<void(Result<AppendResult>)> done) {
  auto opened = impl_->catalog->find(stream);
  if (!opened.ok()) return done(opened.status());
  const EngineStream& s = *(*opened)->stream;
  if (Status placed = check_placed_batch(s.name(), records, partition, s.partition_count(),
                                         s.policy().max_record_bytes, enforce_placement);
      !placed.ok()) {
    return done(std::move(placed));
  }
  impl_->write_encoded(*opened, partition, std::move(batch), std::move(done));
}

void Broker::Impl::write_batch(const std::shared_ptr<OpenStream>& opened, PartitionId p,
                               const std::vector<RecordInput>& records, const ProducerFields& producer,
                               std::function<void(Result<AppendResult>)> done) {
  BatchOptions batch_options;
  batch_options.producer = producer;
  BatchBuilder builder(batch_options);
  for (const RecordInput& r : records) builder.add(r.key, r.payload, r.headers);
  write_encoded(opened, p, std::move(builder).finish(), std::move(done));
}

void Broker::Impl::write_encoded(const std::shared_ptr<OpenStream>& opened, PartitionId p,
                                 std::string encoded, std::function<void(Result<AppendResult>)> done) {
  const uint64_t bytes = encoded.size();
  // Room at once, the common case: written now, with no callbacks to hold the batch and the answer.
  if (opened->backpressure->try_acquire(bytes)) {
    return write_admitted(opened, p, std::move(encoded), std::move(done));
  }
  auto batch = std::make_shared<std::string>(std::move(encoded));
  opened->backpressure->acquire(
      bytes, [opened, p, batch, done] { write_admitted(opened, p, std::move(*batch), done); },
      [done](Status refused) { done(std::move(refused)); });
}

}  // namespace streamd
