// The postgres engine over several databases (server/broker/pg/pg_shards.h, docs/SCALING.md
// §"Shards"): where streams are placed, what every broker agrees on, and what a shard that is down
// costs — its streams only, each refusal naming it. Also the engine's bound on a hung server
// (storage.postgres.reply_timeout). The contract every engine shares runs OnTwoShards in the
// conformance suite.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "server/broker/pg/pg_connection.h"
#include "server/broker/pg/pg_placement.h"
#include "server/broker/pg/pg_shards.h"
#include "tests/broker/broker_fixture.h"
#include "tests/support/pg_cluster.h"
#include "tests/support/proc_stat.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::BrokerFixture;
using testing::check_error;
using testing::eventually;

using Clock = std::chrono::steady_clock;

std::unique_ptr<PgConnection> shard_connection(const std::string& dsn) {
  auto conn = PgConnection::connect(dsn);
  INFO(conn.status().to_string());
  REQUIRE(conn.ok());
  return std::move(conn).value();
}

// Whether the database `dsn` holds a stream named `name`.
bool holds(const std::string& dsn, const std::string& name) {
  PgParams p;
  p.text(name);
  auto r = shard_connection(dsn)->exec("test", "SELECT count(*)::int FROM streamd_streams WHERE name = $1", p);
  REQUIRE(r.ok());
  return r->int4(0, 0) == 1;
}

// A stream name the rule places on shard `shard` of {a, b}, distinct for each `n`.
std::string name_on(const std::string& shard, int n) {
  const std::vector<std::string> names = {"a", "b"};
  for (int i = 0;; ++i) {
    const std::string candidate = "s" + std::to_string(n) + "-" + std::to_string(i);
    if (names[pg_placement::shard_of(names, candidate)] == shard) return candidate;
  }
}

// The postmaster of a test cluster; -1 when it has none.
pid_t postmaster_of(const testing::PgCluster& cluster) {
  std::ifstream in(cluster.dir() + "/data/postmaster.pid");
  pid_t postmaster = -1;
  return in >> postmaster ? postmaster : -1;
}

// SIGSTOP or SIGCONT to every process of a test cluster, so that it hangs whole, connections open and
// unanswered. Asserts nothing, so that a broker's thread may call it.
bool signal_server_from_any_thread(const testing::PgCluster& cluster, int signo) {
  const pid_t postmaster = postmaster_of(cluster);
  return postmaster > 0 && testing::signal_with_children(postmaster, signo);
}

void signal_server(const testing::PgCluster& cluster, int signo) {
  REQUIRE(signal_server_from_any_thread(cluster, signo));
}

// A broker over a cluster of the test's own (so that it may hang it), giving statements up after
// `reply` and resending an idempotent group whose commit went unanswered for `resend`; `stream`
// created, and an idempotent producer's identity.
struct HangableBroker {
  testing::PgCluster cluster;
  std::unique_ptr<BrokerFixture> f;
  ProducerIdentity id;

  HangableBroker(milliseconds reply, milliseconds resend, const std::string& stream) {
    f = std::make_unique<BrokerFixture>(testing::create_database(cluster.dsn()), milliseconds(100), true);
    f->pg_reply_timeout = reply;
    f->pg_resend_unknown_for = resend;
    f->reopen();
    f->create(stream);
    auto given = f->broker->init_producer(std::nullopt);
    REQUIRE(given.ok());
    id = *given;
  }
};

// Producer `id`'s batch of one record at `sequence` on partition 0 of `stream`; `then` runs on the
// broker's thread as the answer comes, before the future has it.
std::future<Result<AppendResult>> send_idempotent(BrokerFixture& f, const std::string& stream,
                                                  const ProducerIdentity& id, int32_t sequence,
                                                  const std::string& payload, std::function<void()> then = nullptr) {
  AppendOptions options;
  options.partition = PartitionId(0);
  options.producer = {id.id, id.epoch, sequence};
  auto done = std::make_shared<std::promise<Result<AppendResult>>>();
  auto answer = done->get_future();
  f.broker->append(stream, testing::inputs({{"", payload}}), options,
                   [done, then = std::move(then)](Result<AppendResult> r) {
                     if (then) then();
                     done->set_value(std::move(r));
                   });
  return answer;
}

TEST_CASE("shards: each stream's rows are in the database its name is placed on", "[postgres][shards]") {
  BrokerFixture f(testing::TestEngine::kPostgresShards);
  for (int n = 0; n < 4; ++n) {
    for (const char* shard : {"a", "b"}) {
      const std::string name = name_on(shard, n);
      f.create(name, Policy{.partitions = 2});
      f.append(name, {{"k", "v"}});
      CHECK(f.commit(name, "g", 0, 0).ok());
      INFO(name << " placed on " << shard);
      CHECK(holds(f.pg_shards[0].dsn, name) == (std::string(shard) == "a"));
      CHECK(holds(f.pg_shards[1].dsn, name) == (std::string(shard) == "b"));
    }
  }
  CHECK(f.broker->list_streams().size() == 8);
}

TEST_CASE("shards: every broker over the same shards serves every stream", "[postgres][shards]") {
  BrokerFixture a(testing::TestEngine::kPostgresShards);
  BrokerFixture b(a.pg_shards, milliseconds(100), true);
  const std::string on_a = name_on("a", 0);
  const std::string on_b = name_on("b", 0);
  a.create(on_a);
  b.create(on_b);
  REQUIRE(eventually([&] { return a.broker->describe_stream(on_b).ok() && b.broker->describe_stream(on_a).ok(); }, milliseconds(10000)));
  const auto appended = b.append(on_a, {{"", "through b"}});
  CHECK(a.read(on_a, appended.partition.value) == std::vector<std::pair<uint64_t, std::string>>{{0, "through b"}});
  // A create racing another broker's, or one of a name another shard holds, is STREAM_EXISTS.
  auto again = a.broker->create_stream(on_b, Policy{}, false);
  check_error(again.status(), Code::kStreamExists, {{"stream", on_b}});
}

TEST_CASE("shards: a database recorded as another shard, or of another list, is refused", "[postgres][shards]") {
  std::vector<PgShardSpec> shards;
  {
    BrokerFixture f(testing::TestEngine::kPostgresShards);
    shards = f.pg_shards;
  }
  ManualClock clock;
  PgEngineOptions options;
  options.pool = 2;
  options.poll_interval = milliseconds(250);
  SECTION("names swapped") {
    auto swapped = PgShards::open({{"a", shards[1].dsn}, {"b", shards[0].dsn}}, options, clock);
    check_error(swapped.status(), Code::kSqlStreamMisconfigured,
                {{"field", "storage.postgres.shards"}, {"shard", "a"}, {"recorded_name", "b"}});
  }
  SECTION("a shard left out") {
    auto fewer = PgShards::open({{"a", shards[0].dsn}}, options, clock);
    check_error(fewer.status(), Code::kSqlStreamMisconfigured,
                {{"field", "storage.postgres.shards"}, {"recorded_shards", "a,b"}, {"listed_shards", "a"}});
  }
  SECTION("the same list opens") {
    auto same = PgShards::open(shards, options, clock);
    INFO(same.status().to_string());
    CHECK(same.ok());
  }
}

TEST_CASE("shards: with one shard down, its streams are refused naming it and the others are served",
          "[postgres][shards]") {
  (void)testing::shared_cluster_dsn();  // skips, naming why, where PostgreSQL cannot run
  testing::PgCluster second;
  std::vector<PgShardSpec> shards = {{"a", testing::create_database(testing::shared_cluster_dsn())},
                                     {"b", testing::create_database(second.dsn())}};
  const std::string on_a = name_on("a", 1);
  const std::string on_b = name_on("b", 1);
  {
    BrokerFixture f(shards, milliseconds(100), true);
    f.create(on_a);
    f.create(on_b);
    f.append(on_b, {{"", "kept"}});
  }

  SECTION("down at start-up, then back") {
    second.stop("immediate");
    BrokerFixture f(shards, milliseconds(100), true);
    f.append(on_a, {{"", "served"}});
    const auto refused = f.try_append(on_b, {{"", "x"}});
    check_error(refused.status(), Code::kStreamBackendFailed, {{"shard", "b"}, {"stream", on_b}});
    check_error(f.broker->describe_stream(on_b).status(), Code::kStreamBackendFailed, {{"shard", "b"}});
    // Not "not found": an auto-create there would be a second stream of the name.
    check_error(f.broker->create_stream(name_on("b", 2), Policy{}, false).status(), Code::kStreamBackendFailed,
                {{"shard", "b"}});
    check_error(f.broker->delete_stream(on_b, true), Code::kStreamBackendFailed, {{"shard", "b"}});
    auto down = f.broker->unreachable_storage();
    REQUIRE(down.size() == 1);
    CHECK(down[0].find("postgres shard b") != std::string::npos);

    second.start();
    REQUIRE(eventually([&] { return f.broker->describe_stream(on_b).ok(); }, milliseconds(10000)));
    CHECK(f.read(on_b, 0) == std::vector<std::pair<uint64_t, std::string>>{{0, "kept"}});
    CHECK(f.broker->unreachable_storage().empty());
  }

  SECTION("down while serving, then back") {
    BrokerFixture f(shards, milliseconds(100), true);
    second.stop("immediate");
    const auto refused = f.try_append(on_b, {{"", "x"}});
    check_error(refused.status(), Code::kStreamBackendFailed, {{"shard", "b"}});
    f.append(on_a, {{"", "served"}});
    REQUIRE(eventually([&] { return f.broker->unreachable_storage().size() == 1; }, milliseconds(10000)));
    CHECK(f.broker->unreachable_storage()[0].find("postgres shard b") != std::string::npos);
    second.start();
    REQUIRE(eventually([&] { return f.try_append(on_b, {{"", "again"}}).ok(); }, milliseconds(10000)));
    REQUIRE(eventually([&] { return f.broker->unreachable_storage().empty(); }, milliseconds(10000)));
  }
}

TEST_CASE("a hung server's statements are given up after reply_timeout, outcome unknown", "[postgres]") {
  (void)testing::shared_cluster_dsn();  // skips, naming why, where PostgreSQL cannot run
  testing::PgCluster cluster;
  BrokerFixture f(testing::create_database(cluster.dsn()), milliseconds(100), true);
  f.pg_reply_timeout = milliseconds(1000);
  f.reopen();
  f.create("hung");
  f.append("hung", {{"", "before"}});
  signal_server(cluster, SIGSTOP);
  const auto sent = Clock::now();
  const auto r = f.try_append("hung", {{"", "during"}});
  const auto waited = Clock::now() - sent;
  signal_server(cluster, SIGCONT);
  check_error(r.status(), Code::kStreamBackendFailed, {{"outcome", "unknown"}});
  CHECK(waited >= milliseconds(900));
  CHECK(waited < milliseconds(5000));
  // The given-up connection is gone; the next statement connects afresh.
  REQUIRE(eventually([&] { return f.try_append("hung", {{"", "after"}}).ok(); }, milliseconds(10000)));
}

TEST_CASE("an idempotent batch whose commit went unanswered is sent again by the broker, and kept once",
          "[postgres]") {
  (void)testing::shared_cluster_dsn();
  HangableBroker hangable(milliseconds(500), milliseconds(20000), "resent");
  BrokerFixture& f = *hangable.f;
  const testing::PgCluster& cluster = hangable.cluster;
  auto append_at = [&](int32_t sequence, const std::string& payload) {
    return send_idempotent(f, "resent", hangable.id, sequence, payload).get();
  };
  REQUIRE(append_at(0, "before").ok());
  // The server hangs past reply_timeout and comes back: the batch is answered, not "outcome unknown".
  signal_server(cluster, SIGSTOP);
  std::thread resume([&] {
    std::this_thread::sleep_for(milliseconds(2000));
    signal_server(cluster, SIGCONT);
  });
  const auto sent = Clock::now();
  const auto during = append_at(1, "during");
  const auto waited = Clock::now() - sent;
  resume.join();
  INFO(during.status().to_string());
  REQUIRE(during.ok());
  CHECK(during->range.first == Offset(1));
  CHECK(waited >= milliseconds(1500));
  // Whatever the given-up commit did, the batch is in the log once; sent again, it is recognised.
  const auto again = append_at(1, "during");
  REQUIRE(again.ok());
  CHECK(again->range.first == Offset(1));
  const auto log = f.read("resent", 0);
  REQUIRE(log.size() == 2);
  CHECK(log[1].second == "during");
}

TEST_CASE("a batch behind one the database failed to write is answered 'not written', not out of order",
          "[postgres]") {
  // A Kafka producer told "possibly written" (REQUEST_TIMED_OUT) for one batch takes an
  // OUT_OF_ORDER_SEQUENCE on the next as fatal: the next must be refused as not written, to be sent
  // again after the first.
  (void)testing::shared_cluster_dsn();
  HangableBroker hangable(milliseconds(1000), milliseconds(1500), "behind");
  BrokerFixture& f = *hangable.f;
  const testing::PgCluster& cluster = hangable.cluster;
  auto send_at = [&](int32_t sequence, const std::string& payload, std::function<void()> then) {
    return send_idempotent(f, "behind", hangable.id, sequence, payload, std::move(then));
  };
  REQUIRE(send_at(0, "before", nullptr).get().ok());
  // The server hangs before the first batch's statements are answered, past reply_timeout and
  // resend_unknown_for; it is back before the batch queued behind is tried.
  signal_server(cluster, SIGSTOP);
  std::atomic<bool> resumed{false};
  auto first = send_at(1, "first", [&] { resumed = signal_server_from_any_thread(cluster, SIGCONT); });
  std::this_thread::sleep_for(milliseconds(300));  // the first is in its statements: the second waits
  auto second = send_at(2, "second", nullptr);
  const auto first_answer = first.get();
  const auto second_answer = second.get();
  if (!resumed) signal_server(cluster, SIGCONT);
  REQUIRE(resumed);
  check_error(first_answer.status(), Code::kStreamBackendFailed, {{"outcome", "unknown"}});
  INFO(second_answer.status().to_string());
  check_error(second_answer.status(), Code::kStreamBackendFailed, {{"expected", "1"}, {"sequence", "2"}});
  CHECK(second_answer.status().field("outcome").empty());
  // Sent again in order, each is written once, where it belongs.
  const auto first_again = send_at(1, "first", nullptr).get();
  REQUIRE(first_again.ok());
  const auto second_again = send_at(2, "second", nullptr).get();
  REQUIRE(second_again.ok());
  CHECK(second_again->range.first == first_again->range.first + 1ull);
  const auto log = f.read("behind", 0);
  REQUIRE(log.size() == 3);
  CHECK(log[1].second == "first");
  CHECK(log[2].second == "second");
  // A gap with no failed batch at its start is still the producer's: out of order.
  check_error(send_at(9, "skipped", nullptr).get().status(), Code::kOutOfOrderSequence, {{"expected", "3"}});
}

}  // namespace
}  // namespace streamd
