// The SQL functions of the PostgreSQL engine (docs/ENGINES.md §"Appends from SQL") against two real
// brokers of one database: an application's own transaction appends records and commits a group's
// offset together with its business rows, or leaves nothing; what it commits is read through every
// broker, long polls woken at COMMIT; concurrent application transactions and broker appends keep
// offsets consecutive; bad calls get the broker's errors and change nothing; and only the roles the
// docs name may call the functions.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proto/placement.h"
#include "server/broker/pg/pg_connection.h"
#include "tests/integration/broker_group.h"
#include "tests/integration/wire_client.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<PgConnection> app_connection(const std::string& dsn) {
  auto conn = PgConnection::connect(dsn);
  INFO(conn.status().to_string());
  REQUIRE(conn.ok());
  return std::move(conn).value();
}

void run(PgConnection& conn, const std::string& sql) {
  const Status s = conn.run("test", sql);
  INFO(sql << ": " << s.to_string());
  REQUIRE(s.ok());
}

// streamd_append in the connection's open transaction: (partition, offset), or the failure.
Result<std::pair<int32_t, int64_t>> sql_append(PgConnection& conn, const std::string& stream, const std::string& key,
                                               const std::string& payload, std::optional<int32_t> partition = {}) {
  PgParams params;
  params.text(stream).bytea(key).bytea(payload);
  std::string sql = "SELECT partition, \"offset\" FROM streamd_append($1, $2, $3";
  if (partition) {
    params.int4(*partition);
    sql += ", $4";
  }
  auto r = conn.exec("test", sql + ")", params);
  if (!r.ok()) return r.status();
  return std::make_pair(r->int4(0, 0), r->int8(0, 1));
}

Status sql_commit_offset(PgConnection& conn, const std::string& stream, const std::string& group, int32_t partition,
                         int64_t next) {
  PgParams params;
  params.text(stream).text(group).int4(partition).int8(next);
  return conn.exec("test", "SELECT streamd_commit_offset($1, $2, $3, $4)", params).status();
}

// Every record of a partition through `port`: (offset, key, payload).
std::vector<std::tuple<uint64_t, std::string, std::string>> read_all(uint16_t port, const std::string& stream,
                                                                     int32_t partition) {
  WireClient c(port);
  std::vector<std::tuple<uint64_t, std::string, std::string>> out;
  uint64_t from = 0;
  for (;;) {
    v1::Response r = c.call(read_request(stream, {{partition, from}}, 1000));
    REQUIRE(r.has_read());
    const auto& p = r.read().partitions(0);
    REQUIRE_FALSE(p.has_error());
    if (p.entries_size() == 0) return out;
    for (const auto& e : p.entries()) out.emplace_back(e.offset(), e.record().key(), e.record().payload());
    from = p.next_from();
  }
}

uint64_t next_of(uint16_t port, const std::string& stream, int32_t partition) {
  WireClient c(port);
  v1::Response b = c.call(bounds_request(stream, partition));
  REQUIRE(b.has_bounds());
  return b.bounds().next();
}

// A broker's head follows commits made elsewhere by their NOTIFY, or at worst its next poll
// (docs/SCALING.md §"What each broker knows, and how late"): not necessarily by the time they return.
// The partition's next offset once it reached `at_least`, or after 5 s.
uint64_t next_reaching(uint16_t port, const std::string& stream, int32_t partition, uint64_t at_least) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  uint64_t next = next_of(port, stream, partition);
  while (next < at_least && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    next = next_of(port, stream, partition);
  }
  return next;
}

v1::Response committed(uint16_t port, const std::string& stream, const std::string& group, int32_t partition) {
  WireClient c(port);
  v1::Request r;
  r.mutable_committed()->set_stream(stream);
  r.mutable_committed()->set_group(group);
  r.mutable_committed()->set_partition(partition);
  return c.call(r);
}

TEST_CASE("postgres SQL: an application's transaction appends and commits with its own rows, or leaves nothing",
          "[postgres][sql]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  BrokerGroup brokers(dsn, 2);
  WireClient first(brokers.port(0));
  REQUIRE(first.call(create_request("outbox", 3)).has_create_stream());
  auto app = app_connection(dsn);
  run(*app, "CREATE TABLE orders (id int PRIMARY KEY, state text NOT NULL)");
  const int32_t p1 = placement::partition_of("order-1", 3);
  std::string other = "order-2";  // an order on another partition
  for (int n = 3; placement::partition_of(other, 3) == p1; ++n) other = "order-" + std::to_string(n);
  const int32_t p2 = placement::partition_of(other, 3);

  // Rolled back: no order, no record, no offset taken.
  run(*app, "BEGIN");
  run(*app, "INSERT INTO orders VALUES (1, 'created')");
  REQUIRE(sql_append(*app, "outbox", "order-1", "created").ok());
  run(*app, "ROLLBACK");
  for (int32_t p = 0; p < 3; ++p) CHECK(next_of(brokers.port(1), "outbox", p) == 0);

  // A long poll on the other broker, waiting before the commit.
  WireClient waiting(brokers.port(1));
  const uint64_t poll = waiting.send(read_request("outbox", {{p1, 0}}, 1000, 10'000));
  REQUIRE(poll != 0);
  std::this_thread::sleep_for(200ms);
  const auto committed_at = std::chrono::steady_clock::now();
  run(*app, "BEGIN");
  run(*app, "INSERT INTO orders VALUES (1, 'created'), (2, 'created')");
  auto a = sql_append(*app, "outbox", "order-1", "created");
  auto b = sql_append(*app, "outbox", other, "created");
  auto c = sql_append(*app, "outbox", "order-1", "paid");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  CHECK(*a == std::make_pair(p1, int64_t{0}));
  CHECK(b->first == p2);
  CHECK(*c == std::make_pair(p1, int64_t{1}));
  run(*app, "COMMIT");
  auto woken = waiting.wait_for(poll, 10s);
  REQUIRE(woken);
  CHECK(std::chrono::steady_clock::now() - committed_at < 5s);  // woken by the NOTIFY, not the wait's end
  REQUIRE(woken->has_read());
  CHECK(woken->read().partitions(0).entries_size() >= 1);

  // Read through both brokers as the broker's own records are; the broker's next append follows them.
  for (uint16_t port : brokers.ports()) {
    using Entry = std::tuple<uint64_t, std::string, std::string>;
    CHECK(read_all(port, "outbox", p1) == std::vector<Entry>{{0, "order-1", "created"}, {1, "order-1", "paid"}});
    CHECK(read_all(port, "outbox", p2) == std::vector<Entry>{{0, other, "created"}});
  }
  v1::Response native = first.call(append_request("outbox", {{"order-1", "shipped", {}}}));
  REQUIRE(native.has_append());
  CHECK(native.append().partition() == p1);
  CHECK(native.append().first() == 2);

  // An exactly-once handler: the group's offset moves with the handler's rows, or not at all.
  run(*app, "BEGIN");
  run(*app, "UPDATE orders SET state = 'billed' WHERE id = 1");
  REQUIRE(sql_commit_offset(*app, "outbox", "billing", p1, 2).ok());
  run(*app, "ROLLBACK");
  CHECK(error_name(committed(brokers.port(1), "outbox", "billing", p1)) == "UNKNOWN_GROUP");
  run(*app, "BEGIN");
  run(*app, "UPDATE orders SET state = 'billed' WHERE id = 1");
  REQUIRE(sql_commit_offset(*app, "outbox", "billing", p1, 2).ok());
  run(*app, "COMMIT");
  auto seen = committed(brokers.port(1), "outbox", "billing", p1);
  for (int i = 0; i < 50 && !seen.has_committed(); ++i) {
    std::this_thread::sleep_for(100ms);  // the broker reads the groups again when the NOTIFY arrives
    seen = committed(brokers.port(1), "outbox", "billing", p1);
  }
  REQUIRE(seen.has_committed());
  CHECK(seen.committed().next() == 2);
  auto in_sql = app->exec("test", "SELECT streamd_committed('outbox', 'billing', " + std::to_string(p1) + ")");
  REQUIRE(in_sql.ok());
  CHECK(in_sql->int8(0, 0) == 2);
}

TEST_CASE("postgres SQL: concurrent application transactions and broker appends keep offsets consecutive",
          "[postgres][sql]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  BrokerGroup brokers(dsn, 2);
  {
    WireClient c(brokers.port(0));
    REQUIRE(c.call(create_request("s", 1)).has_create_stream());
  }
  constexpr int kApps = 3;
  constexpr int kTransactions = 20;
  constexpr int kNative = 60;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kApps; ++t) {
    threads.emplace_back([&, t] {
      auto app = PgConnection::connect(dsn);
      if (!app.ok()) return void(++failures);
      for (int i = 0; i < kTransactions; ++i) {
        const std::string tag = "app" + std::to_string(t) + "-" + std::to_string(i);
        const bool ok = (*app)->run("test", "BEGIN").ok() && sql_append(**app, "s", "", tag + "-a", 0).ok() &&
                        sql_append(**app, "s", "", tag + "-b", 0).ok() &&
                        (*app)->run("test", i % 4 == 3 ? "ROLLBACK" : "COMMIT").ok();
        if (!ok) ++failures;
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < kNative; ++i) {
      WireClient c(brokers.port(i % 2));
      v1::Request r = append_request("s", {{"", "native-" + std::to_string(i), {}}});
      r.mutable_append()->set_partition(0);
      if (!c.call(r).has_append()) ++failures;
    }
  });
  for (std::thread& t : threads) t.join();
  REQUIRE(failures == 0);

  const auto records = read_all(brokers.port(1), "s", 0);
  const size_t committed_transactions = kApps * (kTransactions - kTransactions / 4);
  REQUIRE(records.size() == committed_transactions * 2 + kNative);
  std::set<std::string> payloads;
  for (size_t i = 0; i < records.size(); ++i) {
    CHECK(std::get<0>(records[i]) == i);  // consecutive from 0
    payloads.insert(std::get<2>(records[i]));
  }
  CHECK(payloads.size() == records.size());  // each once
  // A transaction's two records are adjacent: the head row was the transaction's until it ended.
  for (size_t i = 0; i + 1 < records.size(); ++i) {
    const std::string& p = std::get<2>(records[i]);
    if (p.ends_with("-a") && p.starts_with("app")) {
      CHECK(std::get<2>(records[i + 1]) == p.substr(0, p.size() - 1) + "b");
    }
  }
  CHECK(next_reaching(brokers.port(0), "s", 0, records.size()) == records.size());
}

TEST_CASE("postgres SQL: a bad call gets the broker's error and changes nothing", "[postgres][sql]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  BrokerGroup brokers(dsn, 1);
  {
    WireClient c(brokers.port(0));
    REQUIRE(c.call(create_request("s", 2)).has_create_stream());
  }
  auto app = app_connection(dsn);
  auto refused = [&](const Status& s, const std::string& name, const std::string& sqlstate) {
    INFO(s.to_string());
    CHECK_FALSE(s.ok());
    CHECK(s.field("reason").find(name) != std::string::npos);
    CHECK(s.field("sqlstate") == sqlstate);
  };
  refused(sql_append(*app, "nope", "k", "v").status(), "STREAM_NOT_FOUND", "SD404");
  refused(sql_append(*app, "s", "k", std::string(2 << 20, 'x')).status(), "RECORD_TOO_LARGE", "SD413");
  refused(sql_append(*app, "s", "", "v", 2).status(), "UNKNOWN_PARTITION", "SD404");
  const int32_t wrong = 1 - placement::partition_of("k", 2);
  refused(sql_append(*app, "s", "k", "v", wrong).status(), "PARTITIONS_MIXED", "SD400");
  refused(sql_commit_offset(*app, "s", "g", 0, 1), "OFFSET_AHEAD", "SD416");
  refused(sql_commit_offset(*app, "s", "", 0, 0), "STREAM_MISCONFIGURED", "SD400");
  refused(sql_commit_offset(*app, "s", "g", 5, 0), "UNKNOWN_PARTITION", "SD404");
  for (int32_t p = 0; p < 2; ++p) CHECK(next_of(brokers.port(0), "s", p) == 0);
  CHECK(error_name(committed(brokers.port(0), "s", "g", 0)) == "UNKNOWN_GROUP");
  // And the broker goes on serving.
  WireClient c(brokers.port(0));
  CHECK(c.call(append_request("s", {{"k", "v", {}}})).has_append());
}

TEST_CASE("postgres SQL: only the roles granted streamd_producer or streamd_committer may call the functions",
          "[postgres][sql]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  BrokerGroup brokers(dsn, 1);
  {
    WireClient c(brokers.port(0));
    REQUIRE(c.call(create_request("s", 1)).has_create_stream());
  }
  const std::string db = dsn.substr(dsn.find("dbname=") + 7, dsn.find(' ', dsn.find("dbname=")) - dsn.find("dbname=") - 7);
  const std::string role = "app_" + db;
  auto owner = app_connection(dsn);
  run(*owner, "DROP ROLE IF EXISTS " + role);
  run(*owner, "CREATE ROLE " + role + " LOGIN");
  std::string app_dsn = dsn;
  app_dsn.replace(app_dsn.find("user=streamd"), 12, "user=" + role);
  {
    auto app = app_connection(app_dsn);
    const Status denied = sql_append(*app, "s", "", "v").status();
    CHECK(denied.field("sqlstate") == "42501");  // insufficient_privilege
    CHECK(sql_commit_offset(*app, "s", "g", 0, 0).field("sqlstate") == "42501");
    // Nor may it write the tables the functions write.
    CHECK(app->run("test", "DELETE FROM streamd_batches").field("sqlstate") == "42501");
  }
  run(*owner, "GRANT streamd_producer, streamd_committer TO " + role);
  {
    auto app = app_connection(app_dsn);
    auto appended = sql_append(*app, "s", "", "v");
    INFO(appended.status().to_string());
    REQUIRE(appended.ok());
    CHECK(sql_commit_offset(*app, "s", "g", 0, 1).ok());
  }
  CHECK(next_reaching(brokers.port(0), "s", 0, 1) == 1);
  run(*owner, "DROP OWNED BY " + role);
  run(*owner, "DROP ROLE " + role);
}

}  // namespace
}  // namespace streamd::testing
