// Brokers over two PostgreSQL shards (storage.postgres.shards, docs/SCALING.md §"Shards"), with the
// real daemon: every broker serves the streams of both shards; a broker killed -9 loses nothing
// acknowledged; a shard stopped at once (pg_ctl stop -m immediate) fails only its own streams'
// appends, each answer naming it, while /readyz says the broker is degraded and why — and once it is
// back every producer resumes and every acknowledged batch is whole where its answer said.
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "server/broker/pg/pg_placement.h"
#include "tests/integration/broker_group.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int32_t kPartitions = 3;

// A stream name the rule places on `shard` of {a, b}.
std::string name_on(const std::string& shard, const std::string& prefix) {
  const std::vector<std::string> names = {"a", "b"};
  for (int i = 0;; ++i) {
    const std::string candidate = prefix + std::to_string(i);
    if (names[pg_placement::shard_of(names, candidate)] == shard) return candidate;
  }
}

std::vector<std::string> shard_args(const std::string& a, const std::string& b) {
  return {"--storage.postgres.shards", "a: " + a + "; b: " + b, "--storage.postgres.poll-interval", "100ms"};
}

// Both streams' logs, checked against what their producers sent; the consumers read the same.
void check_stream(BrokerGroup& brokers, const std::string& stream, const Producers& sent, Consumer& consumer) {
  INFO("stream " << stream);
  const PartitionLogs logs = read_all(brokers.port(brokers.size() - 1), stream, kPartitions);
  check_log(logs, sent.sent());
  std::map<int32_t, uint64_t> ends;
  for (const auto& [p, log] : logs) ends[p] = log.size();
  consumer.finish(ends, std::chrono::seconds(10));
  INFO(consumer.failures().size() << " consumer failures, first: "
                                  << (consumer.failures().empty() ? "" : consumer.failures()[0]));
  CHECK(consumer.failures().empty());
  for (const auto& [p, log] : logs) {
    const auto it = consumer.logs().find(p);
    REQUIRE(it != consumer.logs().end());
    REQUIRE(it->second.size() == log.size());
    for (size_t i = 0; i < log.size(); ++i) CHECK(it->second[i].payload == log[i].payload);
  }
}

TEST_CASE("two brokers over two shards: every stream through every broker, a broker killed -9",
          "[postgres][shards][brokers]") {
  const std::string shared = shared_cluster_dsn();
  BrokerGroup brokers("", 2, shard_args(create_database(shared), create_database(shared)));
  const std::string on_a = name_on("a", "orders-");
  const std::string on_b = name_on("b", "orders-");
  WireClient admin(brokers.port(0));
  REQUIRE(admin.call(create_request(on_a, kPartitions)).has_create_stream());
  REQUIRE(WireClient(brokers.port(1)).call(create_request(on_b, kPartitions)).has_create_stream());
  for (const auto& name : {on_a, on_b}) {
    for (size_t i = 0; i < brokers.size(); ++i) REQUIRE(wait_for_stream(brokers.port(i), name, kPartitions, milliseconds(3000)) >= 0);
  }
  Producers to_a(on_a, brokers.ports(), 4);
  Producers to_b(on_b, brokers.ports(), 4);
  Consumer read_a(on_a, kPartitions, brokers.port(1), brokers.port(0), "g");
  Consumer read_b(on_b, kPartitions, brokers.port(0), brokers.port(1), "g");
  read_a.start();
  read_b.start();
  to_a.start(100000, milliseconds(2));
  to_b.start(100000, milliseconds(2));
  std::this_thread::sleep_for(milliseconds(500));
  brokers.broker(0).kill9();
  std::this_thread::sleep_for(milliseconds(200));
  REQUIRE(brokers.broker(0).start());
  std::this_thread::sleep_for(milliseconds(500));
  to_a.stop();
  to_b.stop();
  to_a.join();
  to_b.join();
  check_stream(brokers, on_a, to_a, read_a);
  check_stream(brokers, on_b, to_b, read_b);
}

TEST_CASE("two shards: one stopped at once fails only its streams, naming it, and /readyz says so",
          "[postgres][shards][brokers]") {
  (void)shared_cluster_dsn();  // skips, naming why, where PostgreSQL cannot run
  PgCluster first;
  PgCluster second;
  BrokerGroup brokers("", 2, shard_args(create_database(first.dsn()), create_database(second.dsn())));
  const std::string on_a = name_on("a", "events-");
  const std::string on_b = name_on("b", "events-");
  // The probes' own stream on shard a: the producers' logs hold their batches alone.
  const std::string probe_a = name_on("a", "probe-");
  WireClient admin(brokers.port(0));
  for (const auto& name : {on_a, on_b, probe_a}) {
    REQUIRE(admin.call(create_request(name, kPartitions)).has_create_stream());
    REQUIRE(wait_for_stream(brokers.port(1), name, kPartitions, milliseconds(3000)) >= 0);
  }
  Producers to_a(on_a, brokers.ports(), 3);
  Producers to_b(on_b, brokers.ports(), 3);
  Consumer read_a(on_a, kPartitions, brokers.port(1), brokers.port(0), "g");
  Consumer read_b(on_b, kPartitions, brokers.port(0), brokers.port(1), "g");
  read_a.start();
  read_b.start();
  to_a.start(100000, milliseconds(5));
  to_b.start(100000, milliseconds(5));
  std::this_thread::sleep_for(milliseconds(500));

  const auto down = Clock::now();
  second.stop("immediate");
  // An append to the shard's stream is refused, naming the shard; the other shard's is served.
  WireClient probe(brokers.port(1));
  const v1::Response refused = probe.call(append_request(on_b, {{"k", "probe", {}}}));
  REQUIRE(refused.has_error());
  CHECK(refused.error().name() == "STREAM_BACKEND_FAILED");
  CHECK(refused.error().fields().at("shard") == "b");
  CHECK(probe.call(append_request(probe_a, {{"k", "probe", {}}})).has_append());
  // Both brokers stay ready (they serve every other stream) and say what is missing.
  for (size_t i = 0; i < brokers.size(); ++i) {
    std::string body;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      const HttpReply r = brokers.broker(i).http_get("/readyz");
      CHECK(r.status == 200);
      body = r.body;
      if (body.find("degraded: postgres shard b") != std::string::npos) break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    INFO("broker " << i << " /readyz: " << body);
    CHECK(body.find("degraded: postgres shard b") != std::string::npos);
  }
  std::this_thread::sleep_for(milliseconds(1000));
  second.start();
  const auto up = Clock::now();
  // Every producer of the stopped shard's stream resumes by itself.
  std::set<int> resumed;
  const auto deadline = up + std::chrono::seconds(10);
  while (resumed.size() < 3 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
    for (const SentBatch& b : to_b.sent()) {
      if (b.acked && b.sent > up) resumed.insert(b.producer);
    }
  }
  CHECK(resumed.size() == 3);
  to_a.stop();
  to_b.stop();
  to_a.join();
  to_b.join();
  // The other shard's appends went on: none refused while the shard was down.
  for (const SentBatch& b : to_a.sent()) {
    INFO("p" << b.producer << ".b" << b.seq << ": " << b.error);
    if (b.sent > down && b.sent < up) CHECK(b.acked);
  }
  size_t refused_b = 0;
  for (const SentBatch& b : to_b.sent()) {
    if (!b.acked && b.sent > down && b.sent < up) ++refused_b;
    if (!b.acked) CHECK((b.error == "STREAM_BACKEND_FAILED" || b.error == "UNAVAILABLE"));
  }
  CHECK(refused_b > 0);
  check_stream(brokers, on_a, to_a, read_a);
  check_stream(brokers, on_b, to_b, read_b);
  for (size_t i = 0; i < brokers.size(); ++i) {
    CHECK(brokers.broker(i).http_get("/readyz").body.find("degraded") == std::string::npos);
  }
}

}  // namespace
}  // namespace streamd::testing
