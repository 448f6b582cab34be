// PgConnection::pipeline (server/broker/pg/pg_connection.h) against a real PostgreSQL: the round trips of
// one implicit transaction commit together at the Sync and roll back together on an error, a held
// pipeline's transaction is ended by sync(), statements inside BEGIN stay that transaction's, and a
// statement after a row lock sees what the lock's holder committed — the rule an idempotent append's
// producers' rows are read by (docs/ENGINES.md §"Two round trips").
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "server/broker/pg/pg_connection.h"
#include "tests/support/pg_cluster.h"

namespace streamd {
namespace {

std::unique_ptr<PgConnection> open_session(const std::string& dsn) {
  auto conn = PgConnection::connect(dsn);
  INFO(conn.status().to_string());
  REQUIRE(conn.ok());
  return std::move(conn).value();
}

void must_run(PgConnection& conn, const std::string& sql) {
  const Status s = conn.run("test", sql);
  INFO(s.to_string());
  REQUIRE(s.ok());
}

int64_t rows_in(PgConnection& conn, const std::string& table) {
  auto r = conn.exec("test", "SELECT count(*)::bigint FROM " + table);
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  return r->int8(0, 0);
}

const std::string kInsert = "INSERT INTO t (v) VALUES ($1)";
const std::string kFails = "SELECT 1 / $1::int";  // division by zero at 0

struct TestTable {
  TestTable() : dsn(testing::create_database(testing::shared_cluster_dsn())), conn(open_session(dsn)) {
    must_run(*conn, "CREATE TABLE t (v bigint)");
  }
  std::string dsn;
  std::unique_ptr<PgConnection> conn;
};

PgParams value(int64_t v) {
  PgParams p;
  p.int8(v);
  return p;
}

TEST_CASE("pg pipeline: a held round trip and the next one's commit at its Sync, together", "[postgres]") {
  TestTable table;
  const PgParams one = value(1), two = value(2), three = value(3);
  auto held = table.conn->pipeline("test", {{"insert", &kInsert, &one}}, PgPipelineEnd::kHold);
  REQUIRE(held.ok());
  CHECK((*held)[0].affected() == 1);
  // Not committed yet: another session sees nothing.
  auto other = open_session(table.dsn);
  CHECK(rows_in(*other, "t") == 0);
  auto synced = table.conn->pipeline("test", {{"insert", &kInsert, &two}, {"insert", &kInsert, &three}},
                                     PgPipelineEnd::kSync);
  INFO(synced.status().to_string());
  REQUIRE(synced.ok());
  CHECK(synced->size() == 2);
  CHECK(rows_in(*other, "t") == 3);
  // Out of pipeline mode: the connection's other calls work as before.
  CHECK(rows_in(*table.conn, "t") == 3);
}

TEST_CASE("pg pipeline: a statement that fails rolls back both round trips and leaves the connection usable",
          "[postgres]") {
  TestTable table;
  const PgParams one = value(1), two = value(2), zero = value(0);
  PgParams divisor;
  divisor.int4(0);
  REQUIRE(table.conn->pipeline("test", {{"insert", &kInsert, &one}}, PgPipelineEnd::kHold).ok());
  auto failed = table.conn->pipeline(
      "test", {{"insert", &kInsert, &two}, {"fails", &kFails, &divisor}, {"insert", &kInsert, &zero}},
      PgPipelineEnd::kSync);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kStreamBackendFailed);
  CHECK(failed.status().field("sqlstate") == "22012");  // division_by_zero, not the skipped ones'
  CHECK(failed.status().field("outcome").empty());
  CHECK_FALSE(table.conn->broken());
  CHECK(rows_in(*table.conn, "t") == 0);
  // After the failure the connection runs a pipeline as before, and "fails", prepared in the failed
  // pipeline before its execution failed, is still prepared: its rollback took the rows, not the statement.
  PgParams one_divisor;
  one_divisor.int4(1);
  auto again = table.conn->pipeline("test", {{"insert", &kInsert, &one}, {"fails", &kFails, &one_divisor}},
                                    PgPipelineEnd::kSync);
  INFO(again.status().to_string());
  REQUIRE(again.ok());
  CHECK((*again)[1].rows() == 1);
  CHECK(rows_in(*table.conn, "t") == 1);
}

TEST_CASE("pg pipeline: a statement that does not parse is refused, and nothing after it runs", "[postgres]") {
  TestTable table;
  const std::string bad = "SELEC $1";
  const PgParams one = value(1);
  auto refused = table.conn->pipeline("test", {{"bad", &bad, &one}, {"insert", &kInsert, &one}},
                                      PgPipelineEnd::kSync);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().field("sqlstate") == "42601");  // syntax_error
  CHECK(rows_in(*table.conn, "t") == 0);
  // "insert" was skipped, so it was not prepared: its next use prepares it.
  REQUIRE(table.conn->pipeline("test", {{"insert", &kInsert, &one}}, PgPipelineEnd::kSync).ok());
  CHECK(rows_in(*table.conn, "t") == 1);
}

TEST_CASE("pg pipeline: sync() ends a held pipeline, committing what it did", "[postgres]") {
  TestTable table;
  const PgParams one = value(1);
  REQUIRE(table.conn->pipeline("test", {{"insert", &kInsert, &one}}, PgPipelineEnd::kHold).ok());
  const Status s = table.conn->sync("test");
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(rows_in(*open_session(table.dsn), "t") == 1);
  CHECK(table.conn->sync("test").ok());  // nothing held: nothing to do
}

TEST_CASE("pg pipeline: inside BEGIN a Sync commits nothing and the transaction's ROLLBACK undoes it", "[postgres]") {
  TestTable table;
  const PgParams one = value(1);
  must_run(*table.conn, "BEGIN");
  REQUIRE(table.conn->pipeline("test", {{"insert", &kInsert, &one}}, PgPipelineEnd::kSync).ok());
  CHECK(rows_in(*open_session(table.dsn), "t") == 0);
  must_run(*table.conn, "ROLLBACK");
  CHECK(rows_in(*table.conn, "t") == 0);
}

TEST_CASE("pg pipeline: a statement after a row lock sees what the lock's holder committed", "[postgres]") {
  TestTable table;
  must_run(*table.conn, "CREATE TABLE head (id int PRIMARY KEY, n bigint)");
  must_run(*table.conn, "INSERT INTO head VALUES (1, 0)");
  // Another session holds the row and writes beside it, committing only once the pipeline waits.
  auto holder = open_session(table.dsn);
  must_run(*holder, "BEGIN");
  must_run(*holder, "UPDATE head SET n = n + 1 WHERE id = 1");
  must_run(*holder, "INSERT INTO t (v) VALUES (7)");
  const std::string lock = "SELECT n FROM head WHERE id = $1 FOR UPDATE";
  const std::string read = "SELECT count(*)::bigint FROM t WHERE v = $1";
  PgParams id;
  id.int4(1);
  const PgParams seven = value(7);
  auto answers = std::async(std::launch::async, [&] {
    return table.conn->pipeline("test", {{"lock", &lock, &id}, {"read", &read, &seven}}, PgPipelineEnd::kHold);
  });
  // Until the holder commits, the lock is not granted.
  CHECK(answers.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  must_run(*holder, "COMMIT");
  auto r = answers.get();
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  CHECK((*r)[0].int8(0, 0) == 1);  // the row as the holder left it
  CHECK((*r)[1].int8(0, 0) == 1);  // and, read after the lock, the holder's other row
  REQUIRE(table.conn->sync("test").ok());
}

}  // namespace
}  // namespace streamd
