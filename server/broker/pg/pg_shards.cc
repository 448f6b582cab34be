#include "server/broker/pg/pg_shards.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "server/broker/pg/pg_placement.h"
#include "server/broker/pg/pg_schema.h"
#include "server/broker/pg/pg_shard_record.h"

namespace streamd {
namespace {

Status with_shard(Status s, const std::string& shard) {
  if (s.field("shard").empty()) s.with("shard", shard);
  return s;
}

}  // namespace

PgShards::PgShards(const std::vector<PgShardSpec>& shards, const PgEngineOptions& base, const Clock& clock)
    : base_(base), producers_(std::make_shared<ProducerLimits>(base.producers)), clock_(clock) {
  for (const PgShardSpec& spec : shards) {
    names_.push_back(spec.name);
    shards_.push_back({spec, nullptr, Status()});
  }
}

Result<std::unique_ptr<PgShards>> PgShards::open(const std::vector<PgShardSpec>& shards, const PgEngineOptions& base,
                                                 const Clock& clock) {
  if (shards.empty()) {
    return Status(Code::kSqlStreamMisconfigured, "storage.postgres.shards names no database",
                  {{"field", "storage.postgres.shards"}});
  }
  std::unique_ptr<PgShards> engine(new PgShards(shards, base, clock));
  size_t opened = 0;
  Status first_failure;
  for (size_t i = 0; i < shards.size(); ++i) {
    auto shard = engine->open_shard(i);
    if (shard.ok()) {
      engine->shards_[i].engine = std::move(shard).value();
      ++opened;
      continue;
    }
    // A database that answers but is the wrong one, or unsafe, is a configuration to fix: never served.
    if (shard.status().code() == Code::kSqlStreamMisconfigured) {
      engine->close();
      return shard.status();
    }
    engine->shards_[i].last_failure = shard.status();
    if (first_failure.ok()) first_failure = shard.status();
    spdlog::warn("postgres shard {} cannot be reached; its streams are served once it can: {}", shards[i].name,
                 shard.status().to_string());
  }
  if (opened == 0) {
    engine->close();
    return first_failure;
  }
  if (opened < shards.size()) engine->reopener_ = std::thread([e = engine.get()] { e->reopen_loop(); });
  return engine;
}

Status PgShards::init_schema(const std::vector<PgShardSpec>& shards) {
  std::vector<std::string> names;
  for (const PgShardSpec& s : shards) names.push_back(s.name);
  for (const PgShardSpec& s : shards) {
    auto conn = PgConnection::connect(s.dsn, PgSession{std::chrono::milliseconds(0), s.name});
    if (!conn.ok()) return conn.status();
    STREAMD_RETURN_IF_ERROR(with_shard(check_settings(**conn), s.name));
    STREAMD_RETURN_IF_ERROR(check_shard_record(**conn, s.name, names));
    STREAMD_RETURN_IF_ERROR(ensure_schema(**conn));
  }
  return Status();
}

PgShards::~PgShards() { close(); }

Result<std::shared_ptr<PgEngine>> PgShards::open_shard(size_t i) const {
  const PgShardSpec& spec = shards_[i].spec;  // never changes after construction
  PgEngineOptions options = base_;
  options.dsn = spec.dsn;
  options.shard = spec.name;
  options.shared_producers = producers_;
  {
    // The record first: a database that is another shard, or of another set, gets no schema from here.
    auto conn = PgConnection::connect(options.dsn, PgSession{options.reply_timeout, spec.name});
    if (!conn.ok()) return conn.status();
    STREAMD_RETURN_IF_ERROR(with_shard(check_settings(**conn), spec.name));
    STREAMD_RETURN_IF_ERROR(with_shard(check_shard_record(**conn, spec.name, names_), spec.name));
  }
  auto engine = PgEngine::open(options, clock_);
  if (!engine.ok()) return with_shard(engine.status(), spec.name);
  return std::shared_ptr<PgEngine>(std::move(engine).value());
}

void PgShards::reopen_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    closing_cv_.wait_for(lock, base_.poll_interval, [this] { return closing_; });
    if (closing_) return;
    std::vector<size_t> down;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (!shards_[i].engine) down.push_back(i);
    }
    if (down.empty()) return;
    lock.unlock();
    for (size_t i : down) {
      auto engine = open_shard(i);
      if (engine.ok()) {
        adopt(i, std::move(engine).value());
      } else {
        std::lock_guard relock(mu_);
        shards_[i].last_failure = engine.status();
      }
    }
    lock.lock();
  }
}

void PgShards::adopt(size_t i, std::shared_ptr<PgEngine> engine) {
  {
    std::lock_guard lock(mu_);
    if (closing_) {
      engine->close();
      return;
    }
    shards_[i].engine = engine;
    shards_[i].last_failure = Status();
  }
  const auto streams = engine->list();
  spdlog::info("postgres shard {} reached: serving its {} streams", names_[i], streams.size());
  std::lock_guard lock(listener_mu_);
  engine->set_catalog_listener(listener_);
  if (!listener_) return;
  for (const auto& stream : streams) listener_(stream->name());
}

std::vector<std::shared_ptr<PgEngine>> PgShards::engines() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<PgEngine>> out;
  out.reserve(shards_.size());
  for (const Shard& s : shards_) out.push_back(s.engine);
  return out;
}

std::shared_ptr<PgEngine> PgShards::holder(const std::string& name) const {
  const auto all = engines();
  // The rule's shard first: where nearly every name is.
  const size_t home = pg_placement::shard_of(names_, name);
  if (all[home] && all[home]->find(name).ok()) return all[home];
  for (size_t i = 0; i < all.size(); ++i) {
    if (i != home && all[i] && all[i]->find(name).ok()) return all[i];
  }
  return nullptr;
}

const std::string& PgShards::shard_of(const std::string& name) const {
  return names_[pg_placement::shard_of(names_, name)];
}

uint64_t PgShards::size_bytes() const {
  uint64_t total = 0;
  for (const auto& engine : engines()) {
    if (engine) total += engine->size_bytes();
  }
  return total;
}

TxnLog* PgShards::transactions() {
  std::lock_guard lock(mu_);
  return shards_.front().engine ? shards_.front().engine->transactions() : nullptr;
}

Status PgShards::missing(const std::string& name) const {
  const size_t home = pg_placement::shard_of(names_, name);
  std::lock_guard lock(mu_);
  const Shard& shard = shards_[home];
  if (shard.engine) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  // The stream may well exist there: saying it does not would be a lie an auto-create would act on.
  Status s(Code::kStreamBackendFailed, "the stream's shard cannot be reached",
           {{"stream", name}, {"shard", shard.spec.name}});
  if (!shard.last_failure.field("reason").empty()) s.with("reason", shard.last_failure.field("reason"));
  return s;
}

Result<std::shared_ptr<EngineStream>> PgShards::create(const std::string& name, const Policy& policy) {
  if (holder(name)) return Status::of(Code::kStreamExists, {{"stream", name}});
  const size_t home = pg_placement::shard_of(names_, name);
  std::shared_ptr<PgEngine> engine = engines()[home];
  if (!engine) return missing(name);
  return engine->create(name, policy);
}

Status PgShards::remove(const std::string& name) {
  auto engine = holder(name);
  if (!engine) return missing(name);
  return engine->remove(name);
}

Result<Policy> PgShards::alter(const std::string& name, const PolicyEdit& edit) {
  auto engine = holder(name);
  if (!engine) return missing(name);
  return engine->alter(name, edit);
}

Result<std::shared_ptr<EngineStream>> PgShards::find(const std::string& name) const {
  auto engine = holder(name);
  if (!engine) return missing(name);
  return engine->find(name);
}

std::vector<std::shared_ptr<EngineStream>> PgShards::list() const {
  std::vector<std::shared_ptr<EngineStream>> out;
  for (const auto& engine : engines()) {
    if (!engine) continue;
    auto streams = engine->list();
    out.insert(out.end(), streams.begin(), streams.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

void PgShards::set_catalog_listener(CatalogListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
  for (const auto& engine : engines()) {
    if (engine) engine->set_catalog_listener(listener_);
  }
}

RotationShare PgShards::rotation_share() const {
  // Every broker is a member of every shard it reaches: any open shard counts the same brokers.
  for (const auto& engine : engines()) {
    if (engine && engine->reachable()) return engine->rotation_share();
  }
  return {};
}

Result<ProducerIdentity> PgShards::init_producer(std::optional<ProducerIdentity> current) {
  if (current) {
    if (auto bumped = next_epoch(*current)) return *bumped;
  }
  const auto all = engines();
  const size_t n = all.size();
  const size_t start = next_producer_shard_.fetch_add(1, std::memory_order_relaxed);
  Status failure(Code::kStreamBackendFailed, "no shard can be reached to take a producer id from");
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    if (!all[i]) continue;
    auto id = all[i]->init_producer(std::nullopt);
    if (!id.ok()) {
      failure = with_shard(id.status(), names_[i]);
      continue;
    }
    return ProducerIdentity{id->id * static_cast<int64_t>(n) + static_cast<int64_t>(i), 0};
  }
  return failure;
}

std::vector<std::string> PgShards::unreachable() const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const Shard& s : shards_) {
    if (!s.engine) {
      out.push_back("postgres shard " + s.spec.name + " not reached since start-up (its streams are not served): " +
                    s.last_failure.to_string());
    } else if (!s.engine->reachable()) {
      out.push_back("postgres shard " + s.spec.name + " unreachable (its streams' operations fail)");
    }
  }
  return out;
}

void PgShards::close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  closing_cv_.notify_all();
  if (reopener_.joinable()) reopener_.join();
  for (const auto& engine : engines()) {
    if (engine) engine->close();
  }
}

}  // namespace streamd
