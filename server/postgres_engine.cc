#include "server/postgres_engine.h"

#include "server/broker/pg/pg_engine.h"
#include "server/broker/pg/pg_shards.h"

namespace streamd {
namespace {

PgEngineOptions engine_options(const StorageConfig& storage, const ProducerBounds& producers) {
  PgEngineOptions pg;
  pg.dsn = storage.postgres_dsn;
  pg.pool = storage.postgres_pool;
  pg.poll_interval = storage.postgres_poll_interval;
  pg.notify = storage.postgres_notify;
  pg.reply_timeout = storage.postgres_reply_timeout;
  pg.resend_unknown_for = storage.postgres_resend_unknown_for;
  pg.producers = producers;
  return pg;
}

std::vector<PgShardSpec> shard_specs(const StorageConfig& storage) {
  std::vector<PgShardSpec> out;
  for (const PostgresShard& s : storage.postgres_shards) out.push_back({s.name, s.dsn});
  return out;
}

}  // namespace

Result<std::unique_ptr<StreamEngine>> open_postgres_engine(const StorageConfig& storage, const ProducerBounds& producers,
                                                           const Clock& clock) {
  if (!storage.postgres_shards.empty()) {
    auto shards = PgShards::open(shard_specs(storage), engine_options(storage, producers), clock);
    if (!shards.ok()) return shards.status();
    return std::unique_ptr<StreamEngine>(std::move(shards).value());
  }
  auto engine = PgEngine::open(engine_options(storage, producers), clock);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<StreamEngine>(std::move(engine).value());
}

Status init_postgres(const StorageConfig& storage) {
  if (!storage.postgres_shards.empty()) return PgShards::init_schema(shard_specs(storage));
  return PgEngine::init_schema(storage.postgres_dsn);
}

std::string postgres_summary(const StorageConfig& storage) {
  if (!storage.postgres_shards.empty()) {
    std::string out = std::to_string(storage.postgres_shards.size()) + " shards:";
    for (const PostgresShard& s : storage.postgres_shards) out += " " + s.name + " (" + redact_dsn(s.dsn) + ")";
    return out;
  }
  return redact_dsn(storage.postgres_dsn);
}

}  // namespace streamd
