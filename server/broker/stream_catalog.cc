#include "server/broker/stream_catalog.h"

#include <spdlog/spdlog.h>

#include "server/storage/stream_name.h"

namespace streamd {

// An engine with a capacity lets go of a deleted stream's bytes with its last holder (the memory engine
// frees them with the stream), and that may be an append or a read finishing after the delete rather
// than the delete itself: the waiters are offered the room only once the stream is gone.
OpenStream::~OpenStream() {
  stream.reset();
  if (budget) budget->room_freed();
}

void OpenStream::shut(const Status& status) const {
  backpressure->shut(status);
  for (const auto& w : watchers) w->wake_all();
}

StreamCatalog::StreamCatalog(StreamEngine& engine, Scheduler& scheduler, int64_t max_partitions)
    : engine_(engine), scheduler_(scheduler), max_partitions_(max_partitions) {
  if (auto capacity = engine_.capacity()) {
    budget_ = std::make_shared<EngineBudget>(*capacity, [&engine] { return engine.size_bytes(); });
  }
  for (auto& stream : engine_.list()) {
    std::string name = stream->name();
    streams_.emplace(std::move(name), open(std::move(stream)));
  }
  engine_.set_catalog_listener([this](const std::string& name) { sync(name); });
}

void OpenStream::policy_changed() const {
  const Policy policy = stream->policy();
  backpressure->set_limits(static_cast<uint64_t>(policy.max_bytes), policy.block_timeout);
}

void StreamCatalog::sync(const std::string& name) {
  std::lock_guard admin(admin_mu_);
  auto held = engine_.find(name);
  const bool exists = held.ok();
  std::shared_ptr<OpenStream> gone;
  std::shared_ptr<OpenStream> same;
  {
    std::unique_lock lock(streams_mu_);
    auto it = streams_.find(name);
    if (it == streams_.end() && !exists) return;
    if (it != streams_.end() && exists && it->second->stream == *held) {
      same = it->second;
    } else {
      if (it != streams_.end()) {
        gone = std::move(it->second);
        streams_.erase(it);
      }
      if (exists) streams_.emplace(name, open(std::move(held).value()));
    }
  }
  if (same) {
    // The same stream, whose policy another broker may have changed. Outside the map's lock: a larger
    // max_bytes admits waiting appends from here.
    same->policy_changed();
    spdlog::debug("stream {}: policy taken from the engine", name);
    return;
  }
  if (gone) gone->shut(Status::of(Code::kStreamNotFound, {{"stream", name}}));  // its room: ~OpenStream
  spdlog::info("stream {} {} by another broker", name, exists ? (gone ? "replaced" : "created") : "deleted");
}

Result<std::shared_ptr<OpenStream>> StreamCatalog::adopt(const std::string& name) {
  if (auto opened = find(name); opened.ok()) return opened;
  auto held = engine_.find(name);
  if (!held.ok()) return Status::of(Code::kStreamExists, {{"stream", name}});
  auto opened = open(std::move(held).value());
  std::unique_lock lock(streams_mu_);
  streams_.emplace(name, opened);
  return opened;
}

std::shared_ptr<OpenStream> StreamCatalog::open(std::shared_ptr<EngineStream> stream) const {
  auto opened = std::make_shared<OpenStream>();
  opened->stream = std::move(stream);
  const Policy policy = opened->stream->policy();
  opened->budget = budget_;
  std::weak_ptr<EngineStream> weak = opened->stream;
  opened->backpressure = std::make_shared<Backpressure>(
      opened->stream->name(), static_cast<uint64_t>(policy.max_bytes), policy.block_timeout, scheduler_, [weak] {
        auto s = weak.lock();
        return s ? s->size_bytes() : uint64_t{0};
      },
      budget_);
  if (budget_) budget_->enlist(opened->backpressure);
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

Result<std::shared_ptr<OpenStream>> StreamCatalog::find(const std::string& name) const {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  {
    std::shared_lock lock(streams_mu_);
    auto it = streams_.find(name);
    if (it != streams_.end()) return it->second;
  }
  return engine_.missing(name);
}

std::vector<std::shared_ptr<OpenStream>> StreamCatalog::all() const {
  std::shared_lock lock(streams_mu_);
  std::vector<std::shared_ptr<OpenStream>> out;
  out.reserve(streams_.size());
  for (const auto& [name, opened] : streams_) out.push_back(opened);
  return out;
}

size_t StreamCatalog::size() const {
  std::shared_lock lock(streams_mu_);
  return streams_.size();
}

Result<std::shared_ptr<EngineStream>> StreamCatalog::create_within_limit(const std::string& name,
                                                                         const Policy& policy) {
  const int64_t wanted = policy.normalized().partitions;
  int64_t held = 0;
  {
    std::shared_lock lock(streams_mu_);
    for (const auto& [other, opened] : streams_) held += opened->stream->partition_count();
  }
  if (held + wanted > max_partitions_) {
    return Status(Code::kStreamMisconfigured, "partitions: the broker would hold more than max_partitions",
                  {{"field", "partitions"},
                   {"value", std::to_string(wanted)},
                   {"stream", name},
                   {"held", std::to_string(held)},
                   {"max_partitions", std::to_string(max_partitions_)}});
  }
  return engine_.create(name, policy);
}

Status StreamCatalog::create(const std::string& name, const Policy& policy, bool if_not_exists, bool* created) {
  std::lock_guard admin(admin_mu_);
  if (find(name).ok()) {
    return if_not_exists ? Status() : Status::of(Code::kStreamExists, {{"stream", name}});
  }
  auto stream = create_within_limit(name, policy);
  if (!stream.ok()) {
    if (stream.status().code() != Code::kStreamExists) return stream.status();
    // Another broker created it first: serve it from here on.
    (void)adopt(name);
    return if_not_exists ? Status() : stream.status();
  }
  auto opened = open(std::move(stream).value());
  std::unique_lock lock(streams_mu_);
  streams_.emplace(name, std::move(opened));
  if (created != nullptr) *created = true;
  return Status();
}

Result<std::shared_ptr<OpenStream>> StreamCatalog::find_or_create(const std::string& name, const Policy& policy) {
  std::lock_guard admin(admin_mu_);
  if (auto opened = find(name); opened.ok() || opened.status().code() != Code::kStreamNotFound) return opened;
  auto stream = create_within_limit(name, policy);
  if (!stream.ok()) {
    if (stream.status().code() == Code::kStreamExists) return adopt(name);  // another broker's create won
    return stream.status();
  }
  auto opened = open(std::move(stream).value());
  std::unique_lock lock(streams_mu_);
  streams_.emplace(name, opened);
  spdlog::info("stream {} created on first append", name);
  return opened;
}

Result<Policy> StreamCatalog::alter(const std::string& name, const PolicyEdit& edit) {
  std::lock_guard admin(admin_mu_);
  auto opened = find(name);
  if (!opened.ok()) return opened.status();
  auto policy = engine_.alter(name, edit);
  // Also after a failure: an engine whose new policy reached its storage before the failure (the file
  // engine's rename before a failed directory sync) holds it already.
  (*opened)->policy_changed();
  return policy;
}

Status StreamCatalog::remove(const std::string& name, bool if_exists, bool* deleted) {
  std::lock_guard admin(admin_mu_);
  std::shared_ptr<OpenStream> opened;
  {
    std::unique_lock lock(streams_mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) {
      Status missing = engine_.missing(name);
      return if_exists && missing.code() == Code::kStreamNotFound ? Status() : missing;
    }
    opened = std::move(it->second);
    streams_.erase(it);
  }
  opened->shut(Status::of(Code::kStreamNotFound, {{"stream", name}}));
  Status removed = engine_.remove(name);
  if (!removed.ok()) {
    // The engine kept the stream when nothing changed; serve it again.
    if (auto stream = engine_.find(name); stream.ok()) {
      std::unique_lock lock(streams_mu_);
      streams_.emplace(name, open(std::move(stream).value()));
    }
    return removed;
  }
  if (deleted != nullptr) *deleted = true;
  return Status();  // the room is offered when the last holder of `opened` lets go (~OpenStream)
}

void StreamCatalog::close(const Status& status) {
  // First, and outside admin_mu_: a call in progress may be waiting for that lock.
  engine_.set_catalog_listener(nullptr);
  std::lock_guard admin(admin_mu_);
  std::map<std::string, std::shared_ptr<OpenStream>> streams;
  {
    std::unique_lock lock(streams_mu_);
    streams.swap(streams_);
  }
  for (const auto& [name, opened] : streams) opened->shut(status);
  engine_.close();
}

}  // namespace streamd
