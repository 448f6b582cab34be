// What only the postgres engine has (docs/ENGINES.md §"The PostgreSQL engine"): its refusals at start,
// its schema version, what survives a reopen, a lost connection's unknown outcome, the rows it writes,
// and how a poll's read meets this broker's own trims. The contract every engine shares is the conformance suite's (OnPostgres).
#include "server/broker/pg/pg_engine.h"

#include <catch2/catch.hpp>
#include <future>

#include "server/broker/pg/pg_connection.h"
#include "server/broker/pg/pg_partition.h"
#include "server/broker/pg/pg_schema.h"
#include "server/broker/pg/pg_stream.h"
#include "server/storage/batch_builder.h"
#include "server/storage/record_batch.h"
#include "tests/broker/broker_fixture.h"
#include "tests/support/pg_cluster.h"

namespace streamd {
namespace {

using testing::BrokerFixture;
using testing::check_error;
using testing::TestEngine;

// An engine's options: `dsn`, two connections, the rest the defaults.
PgEngineOptions options_for(const std::string& dsn, std::chrono::milliseconds poll_interval, bool notify) {
  PgEngineOptions o;
  o.dsn = dsn;
  o.pool = 2;
  o.poll_interval = poll_interval;
  o.notify = notify;
  return o;
}

std::unique_ptr<PgConnection> connect(const std::string& dsn) {
  auto conn = PgConnection::connect(dsn);
  INFO(conn.status().to_string());
  REQUIRE(conn.ok());
  return std::move(conn).value();
}

void run(const std::string& dsn, const std::string& sql) {
  Status s = connect(dsn)->run("test", sql);
  INFO(s.to_string());
  REQUIRE(s.ok());
}

std::string database_of(const std::string& dsn) {
  const auto at = dsn.find("dbname=") + 7;
  return dsn.substr(at, dsn.find(' ', at) - at);
}

Status open_status(const std::string& dsn) {
  ManualClock clock;
  auto engine = PgEngine::open(options_for(dsn, std::chrono::milliseconds(250), true), clock);
  return engine.ok() ? Status() : engine.status();
}

TEST_CASE("the postgres engine refuses a server with fsync off", "[postgres]") {
  if (!testing::PgCluster::missing().empty()) (void)testing::shared_cluster_dsn();  // skips, naming why
  testing::PgCluster cluster({"fsync=off"});
  check_error(open_status(cluster.dsn()), Code::kSqlStreamMisconfigured, {{"field", "fsync"}, {"value", "off"}});
}

TEST_CASE("the postgres engine refuses synchronous_commit off or local", "[postgres]") {
  const std::string dsn = testing::create_database(testing::shared_cluster_dsn());
  for (const char* value : {"off", "local"}) {
    run(dsn, "ALTER DATABASE " + database_of(dsn) + " SET synchronous_commit = " + value);
    check_error(open_status(dsn), Code::kSqlStreamMisconfigured, {{"field", "synchronous_commit"}, {"value", value}});
  }
  run(dsn, "ALTER DATABASE " + database_of(dsn) + " SET synchronous_commit = remote_apply");
  CHECK(open_status(dsn).ok());
}

TEST_CASE("the postgres engine refuses a default isolation other than READ COMMITTED", "[postgres]") {
  const std::string dsn = testing::create_database(testing::shared_cluster_dsn());
  run(dsn, "ALTER DATABASE " + database_of(dsn) + " SET default_transaction_isolation = 'serializable'");
  check_error(open_status(dsn), Code::kSqlStreamMisconfigured,
              {{"field", "default_transaction_isolation"}, {"value", "serializable"}});
}

TEST_CASE("the postgres engine refuses an empty DSN naming the key", "[postgres]") {
  check_error(open_status(""), Code::kSqlStreamMisconfigured, {{"field", "storage.postgres.dsn"}});
  check_error(PgEngine::init_schema(""), Code::kSqlStreamMisconfigured, {{"field", "storage.postgres.dsn"}});
}

TEST_CASE("the postgres engine creates its schema once and refuses a newer one", "[postgres]") {
  const std::string dsn = testing::create_database(testing::shared_cluster_dsn());
  REQUIRE(PgEngine::init_schema(dsn).ok());
  REQUIRE(PgEngine::init_schema(dsn).ok());  // already there: checked, not recreated
  auto version = connect(dsn)->exec("test", "SELECT count(*), max(version) FROM streamd_schema");
  REQUIRE(version.ok());
  CHECK(version->int8(0, 0) == 1);
  CHECK(version->int4(0, 1) == kPgSchemaVersion);
  run(dsn, "UPDATE streamd_schema SET version = " + std::to_string(kPgSchemaVersion + 1));
  check_error(open_status(dsn), Code::kSqlStreamMisconfigured,
              {{"field", "streamd_schema.version"},
               {"found", std::to_string(kPgSchemaVersion + 1)},
               {"supported", std::to_string(kPgSchemaVersion)}});
}

TEST_CASE("the postgres engine brings a version 2 schema up to date, and its rows still read", "[postgres]") {
  BrokerFixture f(TestEngine::kPostgres);
  f.create("s");
  f.append("s", {{"k", "before"}});
  f.close();
  // What version 2 was: no max_ts; the rows of a version 2 broker hold none.
  run(f.pg_dsn, "ALTER TABLE streamd_batches DROP COLUMN max_ts");
  run(f.pg_dsn, "UPDATE streamd_schema SET version = 2");
  f.open();
  auto version = connect(f.pg_dsn)->exec("test", "SELECT max(version) FROM streamd_schema");
  REQUIRE(version.ok());
  CHECK(version->int4(0, 0) == kPgSchemaVersion);
  f.append("s", {{"k", "after"}});
  CHECK(f.read("s", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "before"}, {1, "after"}});
  // The row without max_ts is looked up by its appended_at, as its batch has no create times.
  auto found = f.broker->offset_for_time("s", PartitionId(0), 0);
  REQUIRE(found.ok());
  REQUIRE(*found);
  CHECK((*found)->offset == Offset(0));
  auto none = f.broker->offset_for_time("s", PartitionId(0), f.clock.now().micros / 1000 + 1);
  REQUIRE(none.ok());
  CHECK_FALSE(*none);
}

TEST_CASE("postgres: a version-1 database is migrated, its commits kept with empty metadata", "[postgres]") {
  const std::string dsn = testing::create_database(testing::shared_cluster_dsn());
  REQUIRE(PgEngine::init_schema(dsn).ok());
  // What a version-1 broker left: the table without its metadata column, one commit in it.
  run(dsn, "ALTER TABLE streamd_group_offsets DROP COLUMN metadata");
  run(dsn, "UPDATE streamd_schema SET version = 1");
  run(dsn, "INSERT INTO streamd_group_offsets (stream_id, group_name, part, next_offset) VALUES (1, 'g', 0, 7)");
  REQUIRE(PgEngine::init_schema(dsn).ok());
  auto row = connect(dsn)->exec("test",
                                "SELECT (SELECT version FROM streamd_schema), length(metadata), next_offset "
                                "FROM streamd_group_offsets");
  REQUIRE(row.ok());
  REQUIRE(row->rows() == 1);
  CHECK(row->int4(0, 0) == kPgSchemaVersion);
  CHECK(row->int4(0, 1) == 0);
  CHECK(row->int8(0, 2) == 7);
}

TEST_CASE("postgres: streams, records and group offsets survive a reopen", "[postgres]") {
  BrokerFixture f(TestEngine::kPostgres);
  Policy policy;
  policy.partitions = 2;
  f.create("s", policy);
  f.append("s", {{"", "a"}});
  f.append("s", {{"", "b"}});
  REQUIRE(f.commit("s", "g", 0, 1).ok());
  f.reopen();
  CHECK(f.read("s", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "a"}});
  CHECK(f.read("s", 1) == std::vector<std::pair<uint64_t, std::string>>{{0, "b"}});
  CHECK(f.broker->committed("s", "g", PartitionId(0)).value() == Offset(1));
  f.append("s", {{"", "c"}});
  CHECK(f.bounds("s", 0).next == Offset(2));
}

TEST_CASE("postgres: one row per appended batch, its bytes the sealed batch", "[postgres]") {
  BrokerFixture f(TestEngine::kPostgres);
  f.create("s");
  f.append("s", {{"k", "one"}, {"k", "two"}});
  f.append("s", {{"k", "three"}});
  auto rows = connect(f.pg_dsn)->exec(
      "test", "SELECT base_offset, end_offset, records, data FROM streamd_batches ORDER BY end_offset");
  REQUIRE(rows.ok());
  REQUIRE(rows->rows() == 2);
  CHECK(rows->int8(0, 0) == 0);
  CHECK(rows->int8(0, 1) == 2);
  CHECK(rows->int4(0, 2) == 2);
  CHECK(rows->int8(1, 0) == 2);
  BatchHeader header;
  std::string reason;
  REQUIRE(check_batch(rows->bytes(1, 3), header, &reason) == BatchCheck::kOk);
  CHECK(header.base_offset == Offset(2));
  auto head = connect(f.pg_dsn)->exec("test", "SELECT first_offset, next_offset, bytes FROM streamd_heads");
  REQUIRE(head.ok());
  CHECK(head->int8(0, 1) == 3);
  CHECK(static_cast<uint64_t>(head->int8(0, 2)) == rows->bytes(0, 3).size() + rows->bytes(1, 3).size());
}

TEST_CASE("postgres: an append over a lost connection is STREAM_BACKEND_FAILED, the next one succeeds",
          "[postgres]") {
  // No NOTIFY and no poll within the test: the engine's own refresh would otherwise find a broken
  // connection first and leave the appends fresh ones.
  BrokerFixture f(testing::create_database(testing::shared_cluster_dsn()), std::chrono::hours(1), false);
  f.create("s");
  f.append("s", {{"", "before"}});
  // Every connection of the engine's pool is cut, as a failover or a restart would; only this test's
  // database, since the cluster serves the tests running beside it too.
  run(f.pg_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'streamd' AND "
                "datname = current_database() AND pid <> pg_backend_pid()");
  bool failed = false;
  for (int i = 0; i < 8 && !failed; ++i) {
    auto r = f.try_append("s", {{"", "during"}});
    if (!r.ok()) {
      check_error(r.status(), Code::kStreamBackendFailed, {{"outcome", "unknown"}});
      failed = true;
    }
  }
  CHECK(failed);
  // The pool opens fresh connections; the head is read again before the next append.
  auto after = f.append("s", {{"", "after"}});
  const Bounds b = f.bounds("s", 0);
  CHECK(after.range.last.value + 1 == b.next.value);
  auto records = f.read("s", 0);
  REQUIRE(!records.empty());
  CHECK(records.front().second == "before");
  CHECK(records.back().second == "after");
  for (size_t i = 0; i < records.size(); ++i) CHECK(records[i].first == i);  // no gap, no duplicate offset
}

TEST_CASE("postgres: a poll that read the head before this broker's trim does not bring back what it removed",
          "[postgres]") {
  ManualClock clock;
  const std::string dsn = testing::create_database(testing::shared_cluster_dsn());
  // No NOTIFY and no poll within the test: the refresh below is the only one.
  auto engine = PgEngine::open(options_for(dsn, std::chrono::hours(1), false), clock);
  INFO(engine.status().to_string());
  REQUIRE(engine.ok());
  Policy policy;
  policy.segment_bytes = 100;  // one 80-byte record per segment
  auto stream = (*engine)->create("s", policy);
  REQUIRE(stream.ok());
  auto* part = std::static_pointer_cast<PgStream>(*stream)->pg_partition(0);
  for (int i = 0; i < 3; ++i) {
    BatchBuilder batch;
    batch.add("", std::string(80, 'x'));
    std::promise<Result<AppendRange>> done;
    part->append(std::move(batch).finish(), [&](Result<AppendRange> r) { done.set_value(std::move(r)); });
    REQUIRE(done.get_future().get().ok());
  }
  // The poll reads the head row, then this broker's trim commits before the poll hands it over.
  const uint64_t generation = part->maintenance_generation();
  auto row = connect(dsn)->exec(
      "test", std::string("SELECT ") + kPgHeadColumns + " FROM streamd_heads");
  REQUIRE(row.ok());
  const PgHead before = pg_head_from(*row, 0, 0);
  REQUIRE(part->trim(Offset(2)).ok());
  const uint32_t segments = part->segment_count();
  const uint64_t bytes = part->size_bytes();
  CHECK(segments < before.segments);
  part->refresh(before, generation);
  CHECK(part->bounds() == Bounds{Offset(2), Offset(3)});
  CHECK(part->segment_count() == segments);
  CHECK(part->size_bytes() == bytes);
}

}  // namespace
}  // namespace streamd
