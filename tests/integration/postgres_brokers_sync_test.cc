// What one broker over PostgreSQL learns of another's work (docs/SCALING.md §"What each broker knows"):
// long polls wake for appends made through another broker, through NOTIFY within milliseconds and,
// with NOTIFY off, within the poll interval; creates, deletes and a name created again with another
// policy reach every broker; a read or commit at offsets only the database knows yet is not refused.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <thread>

#include "tests/integration/broker_group.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

// `rounds` long polls on `reader_port` at the partition's end, each woken by one append through
// `writer_port`: the milliseconds from sending the append to the read's answer, sorted.
std::vector<int64_t> wake_latencies(uint16_t writer_port, uint16_t reader_port, const std::string& stream,
                                    int rounds) {
  WireClient writer(writer_port);
  WireClient reader(reader_port);
  std::vector<int64_t> out;
  for (int i = 0; i < rounds; ++i) {
    const uint64_t id = reader.send(read_request(stream, {{0, static_cast<uint64_t>(i)}}, 10, 10000));
    REQUIRE(id != 0);
    std::this_thread::sleep_for(milliseconds(30));  // the read is waiting
    const auto sent = Clock::now();
    REQUIRE(writer.call(append_request(stream, {{"", "wake " + std::to_string(i), {}}})).has_append());
    auto woke = reader.wait_for(id, milliseconds(12000));
    out.push_back(ms_since(sent));
    REQUIRE(woke.has_value());
    REQUIRE(woke->has_read());
    REQUIRE(woke->read().partitions(0).entries_size() == 1);
    CHECK(woke->read().partitions(0).entries(0).offset() == static_cast<uint64_t>(i));
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t p99(const std::vector<int64_t>& sorted) { return sorted[(sorted.size() * 99 - 1) / 100]; }

TEST_CASE("a long poll on one broker wakes for an append through another, through NOTIFY",
          "[postgres][brokers]") {
  // Polling every 10 s: a wake within a second came by NOTIFY.
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2, {"--storage.postgres.poll-interval", "10s"});
  WireClient admin(brokers.port(0));
  REQUIRE(admin.call(create_request("wake", 1)).has_create_stream());
  REQUIRE(wait_for_stream(brokers.port(1), "wake", 1, milliseconds(2000)) >= 0);
  const auto ms = wake_latencies(brokers.port(0), brokers.port(1), "wake", 30);
  std::printf("cross-broker wake with NOTIFY: p50 %lld ms, p99 %lld ms, max %lld ms (30 rounds)\n",
              static_cast<long long>(ms[ms.size() / 2]), static_cast<long long>(p99(ms)),
              static_cast<long long>(ms.back()));
  CHECK(p99(ms) < 1000);
}

TEST_CASE("a long poll on one broker wakes for an append through another with NOTIFY off, within the poll interval",
          "[postgres][brokers]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2,
                      {"--storage.postgres.notify", "false", "--storage.postgres.poll-interval", "100ms"});
  WireClient admin(brokers.port(0));
  REQUIRE(admin.call(create_request("wake", 1)).has_create_stream());
  REQUIRE(wait_for_stream(brokers.port(1), "wake", 1, milliseconds(2000)) >= 0);
  const auto ms = wake_latencies(brokers.port(0), brokers.port(1), "wake", 20);
  std::printf("cross-broker wake, NOTIFY off, poll 100 ms: p50 %lld ms, p99 %lld ms, max %lld ms (20 rounds)\n",
              static_cast<long long>(ms[ms.size() / 2]), static_cast<long long>(p99(ms)),
              static_cast<long long>(ms.back()));
  // The poll interval, the append's own round trip and a loaded 2-core machine's scheduling.
  CHECK(ms.back() < 100 + 400);
}

// Another broker's create, delete and a create again with more partitions, each seen within `bound`.
void check_catalog_follows(BrokerGroup& brokers, milliseconds bound) {
  WireClient a(brokers.port(0));
  WireClient b(brokers.port(1));
  REQUIRE(a.call(create_request("shared", 2)).has_create_stream());
  const int64_t created = wait_for_stream(brokers.port(1), "shared", 2, bound);
  INFO("create seen after " << created << " ms");
  REQUIRE(created >= 0);
  REQUIRE(b.call(append_request("shared", {{"k", "old", {}}})).has_append());

  v1::Request drop;
  drop.mutable_delete_stream()->set_name("shared");
  REQUIRE(b.call(drop).has_delete_stream());
  const int64_t deleted = wait_for_stream(brokers.port(0), "shared", 0, bound);
  INFO("delete seen after " << deleted << " ms");
  REQUIRE(deleted >= 0);

  REQUIRE(b.call(create_request("shared", 3)).has_create_stream());
  const int64_t again = wait_for_stream(brokers.port(0), "shared", 3, bound);
  INFO("create again seen after " << again << " ms");
  REQUIRE(again >= 0);
  REQUIRE(a.call(append_request("shared", {{"k", "new", {}}})).has_append());
  // The new stream holds only what was appended to it.
  size_t records = 0;
  const v1::Response r = b.call(read_request("shared", {{0, 0}, {1, 0}, {2, 0}}));
  REQUIRE(r.has_read());
  for (const auto& p : r.read().partitions()) {
    for (const auto& e : p.entries()) {
      ++records;
      CHECK(e.record().payload() == "new");
    }
  }
  CHECK(records == 1);
  std::printf("catalog across brokers: create %lld ms, delete %lld ms, create again %lld ms\n",
              static_cast<long long>(created), static_cast<long long>(deleted), static_cast<long long>(again));
}

TEST_CASE("creates and deletes through one broker reach another through NOTIFY", "[postgres][brokers]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2, {"--storage.postgres.poll-interval", "10s"});
  check_catalog_follows(brokers, milliseconds(2000));
}

TEST_CASE("creates and deletes through one broker reach another with NOTIFY off, within the poll interval",
          "[postgres][brokers]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2,
                      {"--storage.postgres.notify", "false", "--storage.postgres.poll-interval", "100ms"});
  check_catalog_follows(brokers, milliseconds(100 + 400));
}

TEST_CASE("reads and commits through a broker that has not heard of another's appends are not refused",
          "[postgres][brokers]") {
  // Neither NOTIFY nor, within the test, a poll: broker b knows only what it asks the database itself.
  const std::string dsn = create_database(shared_cluster_dsn());
  const std::vector<std::string> deaf = {"--storage.postgres.notify", "false", "--storage.postgres.poll-interval",
                                         "1h"};
  BrokerGroup first(dsn, 1, deaf);
  WireClient a(first.port(0));
  REQUIRE(a.call(create_request("lagging", 1)).has_create_stream());
  BrokerGroup second(dsn, 1, deaf);  // loads the stream at start
  WireClient b(second.port(0));
  for (int i = 0; i < 3; ++i) REQUIRE(a.call(append_request("lagging", {{"", "r" + std::to_string(i), {}}})).has_append());

  const v1::Response all = b.call(read_request("lagging", {{0, 0}}));
  REQUIRE(all.has_read());
  CHECK(all.read().partitions(0).entries_size() == 3);
  const v1::Response tail = b.call(read_request("lagging", {{0, 3}}));
  REQUIRE(tail.has_read());
  CHECK_FALSE(tail.read().partitions(0).has_error());
  CHECK(tail.read().partitions(0).entries_size() == 0);
  const v1::Response ahead = b.call(read_request("lagging", {{0, 4}}));
  REQUIRE(ahead.has_read());
  CHECK(ahead.read().partitions(0).error().name() == "OFFSET_AHEAD");

  REQUIRE(a.call(append_request("lagging", {{"", "r3", {}}})).has_append());
  v1::Request commit;
  commit.mutable_commit()->set_stream("lagging");
  commit.mutable_commit()->set_group("g");
  commit.mutable_commit()->set_next(4);
  CHECK(b.call(commit).has_commit());  // past what b last read, not past the database's end
  commit.mutable_commit()->set_next(5);
  CHECK(error_name(b.call(commit)) == "OFFSET_AHEAD");
}

}  // namespace
}  // namespace streamd::testing
