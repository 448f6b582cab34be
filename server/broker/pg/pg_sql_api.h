// The SQL functions with which an application appends records and commits a group's offsets inside its
// own transaction on the PostgreSQL engine's database (docs/ENGINES.md §"Appends from SQL"): the
// transactional outbox without a relay, and an exactly-once handler in plain SQL. They write the rows
// the engine writes — a sealed batch, the head row, closed segments, a group's offset — with the same
// offsets, placement, record limits and refusals as the broker's own appends, and NOTIFY the brokers at
// COMMIT.
#pragma once

#include "server/broker/pg/pg_connection.h"

namespace streamd {

// Creates or replaces the functions, and the roles that may call them where the database user may
// create roles. Run by ensure_schema() at every start, so a new binary's functions replace the old.
Status install_sql_api(PgConnection& conn);

}  // namespace streamd
