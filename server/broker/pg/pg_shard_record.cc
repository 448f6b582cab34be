#include "server/broker/pg/pg_shard_record.h"

namespace streamd {
namespace {

// pg_advisory_xact_lock's key for writing the record: "streamd\1" read as a big-endian integer (the
// schema's is "streamd\0"), so brokers starting at once write one row.
constexpr const char* kRecordLock = "SELECT pg_advisory_xact_lock(8319400191411971073)";

// Shard names hold no comma (server/config's shard list refuses one).
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

Status check_shard_record(PgConnection& conn, const std::string& name, const std::vector<std::string>& shards) {
  const std::string set = joined(shards);
  return conn.transaction("check shard", [&]() -> Status {
    STREAMD_RETURN_IF_ERROR(conn.run("check shard", kRecordLock));
    STREAMD_RETURN_IF_ERROR(
        conn.run("check shard", "CREATE TABLE IF NOT EXISTS streamd_shard (name text NOT NULL, shards text NOT NULL)"));
    auto found = conn.exec("check shard", "SELECT name, shards FROM streamd_shard");
    if (!found.ok()) return found.status();
    if (found->rows() == 0) {
      PgParams params;
      params.text(name).text(set);
      return conn.exec("check shard", "INSERT INTO streamd_shard (name, shards) VALUES ($1, $2)", params).status();
    }
    const std::string found_name(found->bytes(0, 0));
    const std::string found_set(found->bytes(0, 1));
    if (found_name != name || found_set != set) {
      return Status(Code::kSqlStreamMisconfigured,
                    "the database is recorded as another shard, or of another set of shards, than this broker lists",
                    {{"field", "storage.postgres.shards"},
                     {"shard", name},
                     {"recorded_name", found_name},
                     {"recorded_shards", found_set},
                     {"listed_shards", set}});
    }
    return Status();
  });
}

}  // namespace streamd
