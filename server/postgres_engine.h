// The postgres engine as the config asks for it: one database (storage.postgres.dsn, PgEngine) or
// several shards (storage.postgres.shards, PgShards), with the storage.postgres.* options of either.
#pragma once

#include <memory>
#include <string>

#include "server/broker/stream_engine.h"
#include "server/config/config.h"
#include "server/storage/clock.h"

namespace streamd {

Result<std::unique_ptr<StreamEngine>> open_postgres_engine(const StorageConfig& storage, const ProducerBounds& producers,
                                                           const Clock& clock);

// streamd --init-postgres: creates or checks the schema (and each shard's record) and returns.
Status init_postgres(const StorageConfig& storage);

// Where the engine keeps streams, for the start-up log and /healthz (passwords redacted).
std::string postgres_summary(const StorageConfig& storage);

}  // namespace streamd
