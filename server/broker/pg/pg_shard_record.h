// A shard's record of itself (docs/SCALING.md §"Shards"): the one row of streamd_shard in each
// database of storage.postgres.shards, holding that shard's name and the names of every shard of the
// set, in order. The first broker to open the database writes it; every broker after checks its own
// list against it and refuses to start on a difference (SQL_STREAM_MISCONFIGURED, field
// storage.postgres.shards): brokers that listed other shards, or the same DSNs under other names, would
// place streams differently (pg_placement.h), and one DSN given two names would serve a shard twice.
//
// The table is the set's, not the schema's: a lone database (storage.postgres.dsn) has none, and
// streamd_schema's version does not count it.
#pragma once

#include <string>
#include <vector>

#include "server/broker/pg/pg_connection.h"

namespace streamd {

// Writes the record when the database has none; otherwise checks that it names `name` among `shards`.
Status check_shard_record(PgConnection& conn, const std::string& name, const std::vector<std::string>& shards);

}  // namespace streamd
