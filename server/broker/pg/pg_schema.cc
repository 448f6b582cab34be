#include "server/broker/pg/pg_schema.h"

#include "server/broker/pg/pg_sql_api.h"

#include <string>

namespace streamd {
namespace {

// pg_advisory_xact_lock's key for creating the schema: "streamd\0" read as a big-endian integer.
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(8319400191411971072)";

// Version 1. Offsets, sizes and instants (microseconds since the epoch) are bigint; partitions int.
constexpr const char* kCreateV1 = R"sql(
CREATE TABLE streamd_streams (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  partitions int NOT NULL,
  meta bytea NOT NULL
);
CREATE TABLE streamd_heads (
  stream_id bigint NOT NULL,
  part int NOT NULL,
  first_offset bigint NOT NULL,
  next_offset bigint NOT NULL,
  bytes bigint NOT NULL,
  last_at bigint NOT NULL,
  active_base bigint NOT NULL,
  active_bytes bigint NOT NULL,
  active_min_at bigint NOT NULL,
  segments int NOT NULL,
  PRIMARY KEY (stream_id, part)
);
CREATE TABLE streamd_segments (
  stream_id bigint NOT NULL,
  part int NOT NULL,
  end_offset bigint NOT NULL,
  base_offset bigint NOT NULL,
  bytes bigint NOT NULL,
  min_at bigint NOT NULL,
  max_at bigint NOT NULL,
  PRIMARY KEY (stream_id, part, end_offset)
);
CREATE TABLE streamd_batches (
  stream_id bigint NOT NULL,
  part int NOT NULL,
  end_offset bigint NOT NULL,
  base_offset bigint NOT NULL,
  appended_at bigint NOT NULL,
  records int NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (stream_id, part, end_offset)
);
ALTER TABLE streamd_batches ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE streamd_group_offsets (
  stream_id bigint NOT NULL,
  group_name text NOT NULL,
  part int NOT NULL,
  next_offset bigint NOT NULL,
  PRIMARY KEY (stream_id, group_name, part)
);
)sql";

// Version 2: a commit keeps its metadata string (Kafka's OffsetCommit); older rows read as empty.
constexpr const char* kMigrateToV2 =
    "ALTER TABLE streamd_group_offsets ADD COLUMN IF NOT EXISTS metadata bytea NOT NULL DEFAULT ''::bytea";

// Version 3: each batch's largest record timestamp in milliseconds (its create times' max_timestamp, or
// appended_at / 1000 for a batch without create times), which a lookup by create time filters on without
// reading the batches (docs/ENGINES.md §Schema). Rows written before it hold NULL and are read by
// appended_at, as their batches (version 1, no create times) are.
constexpr const char* kMigrateToV3 = "ALTER TABLE streamd_batches ADD COLUMN IF NOT EXISTS max_ts bigint";

// Version 4: transactions (docs/ENGINES.md §Transactions). A head row names the first offset of the
// earliest transaction open on its partition (NULL: none), written with the append that moves it, so
// that a head read anywhere bounds read_committed readers consistently with the offsets it names; the
// open and the aborted transactions are rows of their own; the coordinator keeps each transactional
// id's state in a row.
constexpr const char* kMigrateToV4 = R"sql(
ALTER TABLE streamd_heads ADD COLUMN IF NOT EXISTS first_open bigint;
CREATE TABLE IF NOT EXISTS streamd_open_txns (
  stream_id bigint NOT NULL,
  part int NOT NULL,
  producer_id bigint NOT NULL,
  epoch int NOT NULL,
  first_offset bigint NOT NULL,
  PRIMARY KEY (stream_id, part, producer_id)
);
CREATE TABLE IF NOT EXISTS streamd_aborted_txns (
  stream_id bigint NOT NULL,
  part int NOT NULL,
  marker_offset bigint NOT NULL,
  producer_id bigint NOT NULL,
  first_offset bigint NOT NULL,
  PRIMARY KEY (stream_id, part, marker_offset)
);
CREATE SEQUENCE IF NOT EXISTS streamd_txn_versions MINVALUE 1 START 1;
CREATE TABLE IF NOT EXISTS streamd_transactions (
  transactional_id text PRIMARY KEY,
  version bigint NOT NULL,
  state bytea NOT NULL
);
)sql";

// The tables at this binary's version (the lock held by the caller's transaction).
Status ensure_tables(PgConnection& conn) {
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", kSchemaLock));
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", "CREATE TABLE IF NOT EXISTS streamd_schema (version int NOT NULL)"));
  // Idempotent producers' ids: a sequence never hands a value out twice, whichever broker asks and
  // whatever crashes. Older binaries ignore it, so it needs no new schema version.
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", "CREATE SEQUENCE IF NOT EXISTS streamd_producer_ids MINVALUE 0 START 0"));
  // Each producer's state on a partition (docs/ENGINES.md §"Idempotent producers"), written by the
  // appends that change it.
  STREAMD_RETURN_IF_ERROR(conn.run("create schema",
                                   "CREATE TABLE IF NOT EXISTS streamd_producers (stream_id bigint NOT NULL, "
                                   "part int NOT NULL, producer_id bigint NOT NULL, state bytea NOT NULL, "
                                   "last_used bigint NOT NULL, PRIMARY KEY (stream_id, part, producer_id))"));
  auto version = conn.exec("create schema", "SELECT version FROM streamd_schema");
  if (!version.ok()) return version.status();
  if (version->rows() > 0) {
    const int32_t found = version->int4(0, 0);
    if (found > kPgSchemaVersion) {
      return Status(Code::kSqlStreamMisconfigured, "the database holds a newer streamd schema than this binary knows",
                    {{"field", "streamd_schema.version"},
                     {"found", std::to_string(found)},
                     {"supported", std::to_string(kPgSchemaVersion)}});
    }
    if (found < kPgSchemaVersion) {
      if (found < 2) STREAMD_RETURN_IF_ERROR(conn.run("migrate schema", kMigrateToV2));
      if (found < 3) STREAMD_RETURN_IF_ERROR(conn.run("migrate schema", kMigrateToV3));
      STREAMD_RETURN_IF_ERROR(conn.run("migrate schema", kMigrateToV4));
      PgParams params;
      params.int4(kPgSchemaVersion);
      return conn.exec("migrate schema", "UPDATE streamd_schema SET version = $1", params).status();
    }
    return Status();
  }
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", kCreateV1));
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", kMigrateToV2));
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", kMigrateToV3));
  STREAMD_RETURN_IF_ERROR(conn.run("create schema", kMigrateToV4));
  PgParams params;
  params.int4(kPgSchemaVersion);
  return conn.exec("create schema", "INSERT INTO streamd_schema (version) VALUES ($1)", params).status();
}

}  // namespace

Status ensure_schema(PgConnection& conn) {
  return conn.transaction("create schema", [&]() -> Status {
    STREAMD_RETURN_IF_ERROR(ensure_tables(conn));
    return install_sql_api(conn);
  });
}

}  // namespace streamd
