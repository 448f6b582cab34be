// Transactions on the PostgreSQL engine (docs/ENGINES.md §Transactions) through several brokers of one
// database: a transaction coordinated by one broker is read whole, or not at all, through another; a
// second instance of a transactional id on another broker fences the first; and a transaction whose
// broker was killed is aborted by another at its timeout, since every broker reads the coordinator's
// rows.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/admin.h"
#include "client/transactional_producer.h"
#include "client/txn_admin.h"
#include "server/broker/pg/pg_connection.h"
#include "tests/integration/broker_group.h"
#include "tests/integration/txn_reads.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<client::Connection> connect_to(uint16_t port) {
  client::ConnectionOptions options;
  options.broker = {"127.0.0.1", port};
  options.reconnect_backoff = {10ms, 100ms};
  return std::make_unique<client::Connection>(options);
}

void create(client::Connection& c, const std::string& name, int32_t partitions) {
  client::Policy policy;
  policy.partitions = partitions;
  REQUIRE(client::Admin(c).create_stream(name, policy).ok());
}

size_t records_on(uint16_t port, const std::string& stream, int32_t partitions,
                  v1::Isolation isolation = v1::READ_COMMITTED) {
  size_t n = 0;
  for (int32_t p = 0; p < partitions; ++p) n += txn_payloads(port, stream, p, isolation).size();
  return n;
}

client::Record record(const std::string& key, const std::string& payload) { return client::Record{key, payload, {}}; }

TEST_CASE("postgres: a transaction coordinated by one broker is read whole through another, or not at all",
          "[postgres][transactions]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2);
  auto first = connect_to(brokers.port(0));
  auto second = connect_to(brokers.port(1));
  create(*first, "in", 2);
  create(*first, "out", 3);
  auto txn = client::TransactionalProducer::open(*first, "pg-worker");
  REQUIRE(txn.ok());
  for (int i = 0; i < 30; ++i) (*txn)->send(i % 2 == 0 ? "in" : "out", record("k" + std::to_string(i), "v" + std::to_string(i)));
  const client::Status staged = (*txn)->send_offsets("in", "g", {{0, 5}, {1, 7}});
  INFO((staged.ok() ? std::string() : staged.error().name() + ": " + staged.error().message()));
  REQUIRE(staged.ok());
  // Written and not committed: the other broker's read_committed readers see none of it.
  wait_for_txn_records(brokers.port(1), "out", 3, 15);
  client::Admin other(*second);
  CHECK(records_on(brokers.port(1), "out", 3) == 0);
  CHECK(other.bounds("out", 0).value().last_stable == 0);
  CHECK(other.committed("in", "g", 0).error().name() == "UNKNOWN_GROUP");
  REQUIRE((*txn)->commit().ok());
  CHECK(records_on(brokers.port(1), "in", 2) == 15);
  CHECK(records_on(brokers.port(1), "out", 3) == 15);
  // Group offsets another broker answers from what it last read (docs/ENGINES.md: a refresh away).
  for (int i = 0; i < 50 && !other.committed("in", "g", 1).ok(); ++i) std::this_thread::sleep_for(100ms);
  CHECK(other.committed("in", "g", 0).value() == 5);
  CHECK(other.committed("in", "g", 1).value() == 7);

  // Aborted: its records are read at read_uncommitted only, its offsets never committed.
  for (int i = 0; i < 10; ++i) (*txn)->send("out", record("k" + std::to_string(i), "x" + std::to_string(i)));
  REQUIRE((*txn)->send_offsets("in", "g", {{0, 9}}).ok());
  REQUIRE((*txn)->abort().ok());
  for (int32_t p = 0; p < 3; ++p) {
    for (const std::string& v : txn_payloads(brokers.port(1), "out", p)) CHECK(v.front() == 'v');
    auto bounds = other.bounds("out", p);
    REQUIRE(bounds.ok());
    CHECK(bounds->last_stable == bounds->next);
  }
  CHECK(records_on(brokers.port(1), "out", 3) == 15);
  CHECK(records_on(brokers.port(1), "out", 3, v1::READ_UNCOMMITTED) == 25);
  CHECK(other.committed("in", "g", 0).value() == 5);

  // The other broker describes the id as the coordinator left it: the state is the database's.
  auto described = client::TxnAdmin(*second).describe("pg-worker");
  for (int i = 0; i < 50 && (!described.ok() || described->state != "CompleteAbort"); ++i) {
    std::this_thread::sleep_for(100ms);  // its view is read again every transaction check
    described = client::TxnAdmin(*second).describe("pg-worker");
  }
  REQUIRE(described.ok());
  CHECK(described->state == "CompleteAbort");
  CHECK(described->producer == (*txn)->identity());
}

TEST_CASE("postgres: a second instance of a transactional id on another broker fences the first",
          "[postgres][transactions]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2);
  auto first = connect_to(brokers.port(0));
  auto second = connect_to(brokers.port(1));
  create(*first, "s", 1);
  auto zombie = client::TransactionalProducer::open(*first, "fenced");
  REQUIRE(zombie.ok());
  (*zombie)->send("s", record("", "zombie"));
  wait_for_txn_records(brokers.port(0), "s", 1, 1);

  auto current = client::TransactionalProducer::open(*second, "fenced");
  REQUIRE(current.ok());
  CHECK((*current)->identity().id == (*zombie)->identity().id);
  CHECK((*current)->identity().epoch > (*zombie)->identity().epoch);
  // The zombie's broker learns it is fenced when it tries to write its decision.
  const client::Status refused = (*zombie)->commit();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().name() == "PRODUCER_FENCED");
  (*current)->send("s", record("", "current"));
  REQUIRE((*current)->commit().ok());
  for (uint16_t port : brokers.ports()) {
    CHECK(txn_payloads(port, "s", 0) == std::vector<std::string>{"current"});
    CHECK(txn_payloads(port, "s", 0, v1::READ_UNCOMMITTED) == std::vector<std::string>{"zombie", "current"});
  }
}

TEST_CASE("postgres: the transaction of a broker killed mid-transaction is aborted by another at its timeout",
          "[postgres][transactions]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2);
  auto first = connect_to(brokers.port(0));
  create(*first, "s", 2);
  client::TransactionOptions options;
  options.transaction_timeout = 2s;
  auto orphan = client::TransactionalProducer::open(*first, "orphan", options);
  INFO((orphan.ok() ? std::string() : orphan.error().name() + ": " + orphan.error().message()));
  REQUIRE(orphan.ok());
  for (int i = 0; i < 4; ++i) (*orphan)->send("s", record("k" + std::to_string(i), "orphaned"));
  wait_for_txn_records(brokers.port(1), "s", 2, 4);
  brokers.broker(0).kill9();

  auto second = connect_to(brokers.port(1));
  client::Admin admin(*second);
  auto stable_everywhere = [&] {
    for (int32_t p = 0; p < 2; ++p) {
      auto b = admin.bounds("s", p);
      if (!b.ok() || b->last_stable != b->next) return false;
    }
    return true;
  };
  for (int i = 0; i < 150 && !stable_everywhere(); ++i) std::this_thread::sleep_for(100ms);
  REQUIRE(stable_everywhere());
  CHECK(records_on(brokers.port(1), "s", 2) == 0);
  CHECK(records_on(brokers.port(1), "s", 2, v1::READ_UNCOMMITTED) == 4);
  auto described = client::TxnAdmin(*second).describe("orphan");
  REQUIRE(described.ok());
  CHECK(described->state == "CompleteAbort");
  CHECK(described->producer.epoch > (*orphan)->identity().epoch);  // the abort fenced the orphan
}

TEST_CASE("postgres: transactions of many producers through two brokers end together, each whole",
          "[postgres][transactions]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  BrokerGroup brokers(dsn, 2);
  auto setup = connect_to(brokers.port(0));
  create(*setup, "a", 2);
  create(*setup, "b", 2);
  constexpr int kProducers = 8;
  constexpr int kTransactions = 15;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kProducers; ++w) {
    threads.emplace_back([&, w] {
      auto c = connect_to(brokers.port(static_cast<size_t>(w % 2)));
      auto txn = client::TransactionalProducer::open(*c, "many-" + std::to_string(w));
      if (!txn.ok()) return void(++failures);
      for (int t = 0; t < kTransactions; ++t) {
        // Each transaction: four records, one per partition of both streams; every third aborted.
        const std::string tag = std::to_string(w) + "." + std::to_string(t) + (t % 3 == 2 ? ".aborted" : "");
        for (int i = 0; i < 4; ++i) (*txn)->send(i < 2 ? "a" : "b", record("k" + std::to_string(i), tag));
        if (!(t % 3 == 2 ? (*txn)->abort() : (*txn)->commit()).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failures == 0);
  // Read committed through either broker: every committed transaction's four records, nothing aborted.
  std::map<std::string, int> seen;
  for (const char* stream : {"a", "b"}) {
    for (int32_t p = 0; p < 2; ++p) {
      for (const std::string& v : txn_payloads(brokers.port(1), stream, p)) ++seen[v];
    }
  }
  CHECK(seen.size() == static_cast<size_t>(kProducers * (kTransactions - kTransactions / 3)));
  for (const auto& [tag, n] : seen) {
    INFO(tag);
    CHECK(tag.find("aborted") == std::string::npos);
    CHECK(n == 4);
  }
  // Nothing left open in the database: no transaction row, every head stable.
  auto conn = PgConnection::connect(dsn);
  REQUIRE(conn.ok());
  auto open = (*conn)->exec("test", "SELECT count(*) FROM streamd_open_txns");
  REQUIRE(open.ok());
  CHECK(open->int8(0, 0) == 0);
  auto heads = (*conn)->exec("test", "SELECT count(*) FROM streamd_heads WHERE first_open IS NOT NULL");
  REQUIRE(heads.ok());
  CHECK(heads->int8(0, 0) == 0);
}

}  // namespace
}  // namespace streamd::testing
