// Two brokers over one PostgreSQL database (docs/SCALING.md): what one creates, deletes and appends
// reaches the other's catalog and reads; a create the other made first is served, not refused; a read
// or commit past the head a broker last saw asks the database before refusing OFFSET_AHEAD; brokers
// racing on one partition each write every batch once; brokers' unkeyed appends take different
// partitions while both are up, and one left alone takes them all again.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using testing::BrokerFixture;
using testing::check_error;
using testing::TestEngine;
using std::chrono::milliseconds;

using testing::eventually;
using testing::kNeverPolls;

int32_t partitions_of(BrokerFixture& f, const std::string& stream) {
  auto d = f.broker->describe_stream(stream);
  return d.ok() ? static_cast<int32_t>(d->partitions.size()) : 0;
}

TEST_CASE("postgres: another broker's create, delete and create again reach this broker's catalog",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  BrokerFixture b(a.pg_dsn, kNeverPolls, true);  // NOTIFY alone
  Policy two;
  two.partitions = 2;
  a.create("s", two);
  REQUIRE(eventually([&] { return partitions_of(b, "s") == 2; }));
  b.append("s", {{"k", "from b"}});

  REQUIRE(a.broker->delete_stream("s").ok());
  REQUIRE(eventually([&] { return partitions_of(b, "s") == 0; }));

  Policy three;
  three.partitions = 3;
  a.create("s", three);
  REQUIRE(eventually([&] { return partitions_of(b, "s") == 3; }));
  const auto appended = b.append("s", {{"k", "new"}});
  CHECK(appended.range.first == Offset(0));  // a new stream, not the old one's offsets
  CHECK(a.read("s", appended.partition.value) == std::vector<std::pair<uint64_t, std::string>>{{0, "new"}});
}

TEST_CASE("postgres: a poll finds another broker's create when no NOTIFY came", "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  BrokerFixture b(a.pg_dsn, milliseconds(50), false);
  a.create("polled");
  REQUIRE(eventually([&] { return partitions_of(b, "polled") == 1; }));
}

TEST_CASE("postgres: auto-creates of one name on two brokers both append", "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  BrokerFixture b(a.pg_dsn, kNeverPolls, false);
  a.append("auto", {{"k", "first"}});
  // b never heard of it: its create finds the name taken and serves the stream a made.
  b.append("auto", {{"k", "second"}});
  CHECK(a.read("auto", 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "first"}, {1, "second"}});
  check_error(b.broker->create_stream("auto", {}, false).status(), Code::kStreamExists, {{"stream", "auto"}});
  CHECK(b.broker->create_stream("auto", {}, true).ok());
}

TEST_CASE("postgres: reads and commits past the head a broker last saw ask the database",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  a.create("lag");
  BrokerFixture b(a.pg_dsn, kNeverPolls, false);  // holds the stream, empty, from its start
  for (const char* p : {"r0", "r1", "r2"}) a.append("lag", {{"", p}});

  CHECK(b.read("lag", 0).size() == 3);
  CHECK(b.bounds("lag", 0).next == Offset(3));  // the read took the head it found
  a.append("lag", {{"", "r3"}});
  CHECK(b.read("lag", 0, 3) == std::vector<std::pair<uint64_t, std::string>>{{3, "r3"}});
  a.append("lag", {{"", "r4"}});
  CHECK(b.commit("lag", "g", 0, 5).ok());
  check_error(b.commit("lag", "g", 0, 6), Code::kOffsetAhead, {{"next", "5"}});
  auto ahead = b.broker->read("lag", {{PartitionId(0), Offset(7)}}, 10, 0);
  REQUIRE(ahead.ok());
  check_error((*ahead)[0].status, Code::kOffsetAhead, {{"next", "5"}});
}

TEST_CASE("postgres: brokers racing on one partition write every batch once, at consecutive offsets",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  a.create("race");
  // Neither hears of the others' appends but through its own statements: each append that follows
  // another broker's finds the head moved under it.
  BrokerFixture b(a.pg_dsn, kNeverPolls, false);
  BrokerFixture c(a.pg_dsn, kNeverPolls, false);
  BrokerFixture* brokers[] = {&a, &b, &c};
  constexpr int kThreadsPerBroker = 4;
  constexpr int kAppendsPerThread = 40;
  std::vector<std::string> failures[3 * kThreadsPerBroker];
  std::vector<std::thread> threads;
  for (int t = 0; t < 3 * kThreadsPerBroker; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppendsPerThread; ++i) {
        const std::string payload = std::to_string(t) + "/" + std::to_string(i);
        auto r = brokers[t % 3]->try_append("race", {{"", payload + "a"}, {"", payload + "b"}});
        if (!r.ok()) failures[t].push_back(r.status().to_string());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) CHECK(f.empty());

  const auto records = c.read("race", 0);
  REQUIRE(records.size() == 2u * 3 * kThreadsPerBroker * kAppendsPerThread);
  std::set<std::string> seen;
  for (size_t i = 0; i < records.size(); ++i) {
    REQUIRE(records[i].first == i);
    CHECK(seen.insert(records[i].second).second);
    // A batch's two records sit side by side.
    if (records[i].second.back() == 'a') {
      REQUIRE(i + 1 < records.size());
      CHECK(records[i + 1].second == records[i].second.substr(0, records[i].second.size() - 1) + "b");
    }
  }
  for (BrokerFixture* f : brokers) CHECK(f->bounds("race", 0).next <= Offset(records.size()));
}

// The partitions that `n` all-unkeyed appends through `f` went to.
std::set<int32_t> unkeyed_partitions(BrokerFixture& f, const std::string& stream, int n) {
  std::set<int32_t> taken;
  for (int i = 0; i < n; ++i) taken.insert(f.append(stream, {{"", "u"}}).partition.value);
  return taken;
}

// The partitions a describe through `f` marks in_rotation.
std::set<int32_t> in_rotation(BrokerFixture& f, const std::string& stream) {
  std::set<int32_t> marked;
  auto d = f.broker->describe_stream(stream);
  REQUIRE(d.ok());
  for (const PartitionDescription& p : d->partitions) {
    if (p.in_rotation) marked.insert(p.partition.value);
  }
  return marked;
}

TEST_CASE("postgres: two brokers' unkeyed appends take different partitions, one alone takes them all",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  Policy four;
  four.partitions = 4;
  a.create("spread", four);
  const std::set<int32_t> all{0, 1, 2, 3};
  CHECK(unkeyed_partitions(a, "spread", 8) == all);

  auto b = std::make_unique<BrokerFixture>(a.pg_dsn, milliseconds(50), true);
  REQUIRE(eventually([&] { return partitions_of(*b, "spread") == 4; }));
  // Each learns of the other within a poll interval; until then both may take any partition.
  std::set<int32_t> by_a, by_b;
  REQUIRE(eventually([&] {
    by_a = unkeyed_partitions(a, "spread", 4);
    by_b = unkeyed_partitions(*b, "spread", 4);
    return by_a.size() == 2 && by_b.size() == 2 && by_a.count(*by_b.begin()) == 0;
  }));
  // Halves of one rotation: p % 2 tells them apart.
  CHECK(*by_a.begin() % 2 != *by_b.begin() % 2);
  CHECK(*by_a.begin() % 2 == *by_a.rbegin() % 2);
  // Each describes its own half as in_rotation, so that producers choosing partitions follow it.
  CHECK(in_rotation(a, "spread") == by_a);
  CHECK(in_rotation(*b, "spread") == by_b);

  // A broker gone releases its share: the one left takes every partition again.
  b.reset();
  REQUIRE(eventually([&] { return unkeyed_partitions(a, "spread", 4) == all; }));
  CHECK(in_rotation(a, "spread") == all);
}

}  // namespace
}  // namespace streamd
