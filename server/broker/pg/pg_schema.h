// The PostgreSQL engine's schema (docs/ENGINES.md §"Schema"): created by the broker, versioned by the
// one row of streamd_schema. ensure_schema() creates what is missing under an advisory lock, so brokers
// starting at once over an empty database create it once; a database whose schema is newer than this
// binary knows is refused (SQL_STREAM_MISCONFIGURED, field streamd_schema.version), never altered; an
// older one is brought to this version in the same locked transaction.
#pragma once

#include "server/broker/pg/pg_connection.h"

namespace streamd {

// 2: streamd_group_offsets.metadata (Kafka's commit metadata).
// 3: streamd_batches.max_ts, the largest record timestamp of a batch (create-time lookups).
// 4: transactions: streamd_heads.first_open, streamd_open_txns, streamd_aborted_txns,
//    streamd_transactions.
// An older database is migrated.
inline constexpr int32_t kPgSchemaVersion = 4;

Status ensure_schema(PgConnection& conn);

}  // namespace streamd
