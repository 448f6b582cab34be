// A policy change on one broker of a PostgreSQL database reaches the others (docs/SCALING.md), as a
// create does: through NOTIFY, or the poll when no NOTIFY comes; their describe, routing and
// backpressure then go by it. Two brokers changing different fields of one stream at once both keep
// their change: each edits the row as the other left it.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server/broker/policy_change.h"
#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::TestEngine;

using testing::eventually;
using testing::kNeverPolls;

// The policy `f` describes for `stream`; the zero policy while it knows no such stream.
Policy seen_policy(BrokerFixture& f, const std::string& stream) {
  auto d = f.broker->describe_stream(stream);
  return d.ok() ? d->policy : Policy{};
}

TEST_CASE("postgres: another broker's policy change reaches this broker through NOTIFY", "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  Policy policy;
  policy.partitions = 2;
  policy.max_record_bytes = 1000;
  a.create("s", policy);
  BrokerFixture b(a.pg_dsn, kNeverPolls, true);  // NOTIFY alone
  REQUIRE(seen_policy(b, "s").max_record_bytes == 1000);
  b.append("s", {{"k", "before"}});

  PolicyChange change;
  change.max_record_bytes = 4000;
  change.retain_for = std::chrono::minutes(3);
  auto altered = a.broker->alter_stream("s", change);
  REQUIRE(altered.ok());
  REQUIRE(eventually([&] { return seen_policy(b, "s") == *altered; }));
  // b routes by the new record limit, with the same stream: what it held stays readable.
  b.append("s", {{"k", std::string(3000, 'x')}});
  CHECK(b.read("s", b.append("s", {{"k", "after"}}).partition.value).size() == 3);
}

TEST_CASE("postgres: a poll brings another broker's change of max_bytes to this broker's backpressure",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  Policy policy;
  policy.max_record_bytes = 1000;
  a.create("bounded", policy);
  BrokerFixture b(a.pg_dsn, milliseconds(50), false);  // polling alone
  for (int i = 0; i < 3; ++i) b.append("bounded", {{"", std::string(900, 'x')}});

  PolicyChange full;
  full.max_bytes = 1000;  // already passed: the stream is full from now on
  REQUIRE(a.broker->alter_stream("bounded", full).ok());
  // The catalog takes the new limits right after the engine's refresh: until then an append may pass.
  Status refused;
  REQUIRE(eventually([&] {
    refused = b.try_append("bounded", {{"", "no room?"}}).status();
    return !refused.ok();
  }));
  check_error(refused, Code::kStreamFull, {{"stream", "bounded"}, {"max_bytes", "1000"}});
  CHECK(seen_policy(b, "bounded").max_bytes == 1000);
}

TEST_CASE("postgres: brokers changing different fields of one stream at once both keep their change",
          "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  a.create("both");
  BrokerFixture b(a.pg_dsn, kNeverPolls, false);  // hears of nothing: edits what the row holds
  std::vector<std::string> failures_a, failures_b;  // Catch2's assertions are for the test's thread
  std::thread by_a([&] {
    for (int i = 1; i <= 20; ++i) {
      PolicyChange change;
      change.retain_bytes = i * 1000;
      if (auto r = a.broker->alter_stream("both", change); !r.ok()) failures_a.push_back(r.status().to_string());
    }
  });
  for (int i = 1; i <= 20; ++i) {
    PolicyChange change;
    change.retain_for = std::chrono::seconds(i);
    if (auto r = b.broker->alter_stream("both", change); !r.ok()) failures_b.push_back(r.status().to_string());
  }
  by_a.join();
  CHECK(failures_a.empty());
  CHECK(failures_b.empty());
  // Whichever wrote last read the other's last change from the row and kept it.
  BrokerFixture c(a.pg_dsn, kNeverPolls, false);
  const Policy kept = seen_policy(c, "both");
  CHECK(kept.retain_bytes == 20 * 1000);
  CHECK(kept.retain_for == std::chrono::seconds(20));
}

TEST_CASE("postgres: a change of a stream another broker deleted is STREAM_NOT_FOUND", "[postgres][brokers]") {
  BrokerFixture a(TestEngine::kPostgres);
  a.create("gone");
  BrokerFixture b(a.pg_dsn, kNeverPolls, false);  // still holds it after a's delete
  REQUIRE(a.broker->delete_stream("gone").ok());
  PolicyChange change;
  change.retain_bytes = 1000;
  check_error(b.broker->alter_stream("gone", change).status(), Code::kStreamNotFound, {{"stream", "gone"}});
}

}  // namespace
}  // namespace streamd
