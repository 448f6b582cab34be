// A broker over a temp directory (the file engine), the memory engine or a fresh database of the suite's
// PostgreSQL (tests/support/pg_cluster.h), with a manual clock and scheduler, and blocking helpers for
// the asynchronous operations.
//
// The conformance suite: every test declared with ENGINE_TEST_CASE runs once per engine (its name ends
// " - OnFiles", " - InMemory", " - OnPostgres" or " - OnTwoShards": the postgres engine over two
// databases, storage.postgres.shards), through the broker, so every engine is held to the same contract
// (docs/ENGINES.md). Tags: [conformance].
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/broker/broker.h"
#include "server/broker/memory/memory_engine.h"
#include "server/broker/pg/pg_engine.h"
#include "server/broker/pg/pg_shards.h"
#include "tests/broker/manual_scheduler.h"
#include "tests/support/pg_cluster.h"
#include "tests/support/temp_dir.h"

namespace streamd::testing {

enum class TestEngine { kFile, kMemory, kPostgres, kPostgresShards };


struct Rec {
  std::string key;
  std::string payload;
};

inline std::vector<RecordInput> inputs(const std::vector<Rec>& records) {
  std::vector<RecordInput> out;
  for (const Rec& r : records) out.push_back({r.key, r.payload, {}});
  return out;
}

class BrokerFixture {
 public:
  explicit BrokerFixture(BrokerOptions options = default_options(), FileSystem& fs = posix_file_system())
      : broker_options(std::move(options)), file_system(fs) {
    open();
  }
  explicit BrokerFixture(TestEngine kind, BrokerOptions options = default_options())
      : engine(kind), broker_options(std::move(options)), file_system(posix_file_system()) {
    open();
  }
  // Another broker over the database `pg_database` (several brokers over one PostgreSQL), learning of
  // the others' changes through NOTIFY when `notify` and every `poll_interval`.
  BrokerFixture(std::string pg_database, std::chrono::milliseconds poll_interval, bool notify,
                BrokerOptions options = default_options())
      : engine(TestEngine::kPostgres),
        pg_dsn(std::move(pg_database)),
        pg_poll_interval(poll_interval),
        pg_notify(notify),
        broker_options(std::move(options)),
        file_system(posix_file_system()) {
    open();
  }
  // Another broker over the shards `shards` (several brokers over one sharded postgres engine).
  BrokerFixture(std::vector<PgShardSpec> shards, std::chrono::milliseconds poll_interval, bool notify,
                BrokerOptions options = default_options())
      : engine(TestEngine::kPostgresShards),
        pg_shards(std::move(shards)),
        pg_poll_interval(poll_interval),
        pg_notify(notify),
        broker_options(std::move(options)),
        file_system(posix_file_system()) {
    open();
  }
  ~BrokerFixture() { close(); }

  static BrokerOptions default_options() {
    BrokerOptions options;
    options.retention_check_period = std::chrono::milliseconds(0);
    options.partition_options.preallocate_bytes = 4096;
    return options;
  }

  // The memory engine starts empty at every open; the postgres one reopens the fixture's database.
  void open(Executor* executor = nullptr) {
    Executor& storage = executor ? *executor : pool;
    auto opened = [&]() -> Result<std::unique_ptr<Broker>> {
      switch (engine) {
        case TestEngine::kMemory:
          return Broker::open(std::make_unique<MemoryEngine>(memory_max_bytes, storage, clock), broker_options,
                              storage, clock, scheduler);
        case TestEngine::kPostgres: {
          if (pg_dsn.empty()) pg_dsn = create_database(shared_cluster_dsn());
          auto pg = PgEngine::open(pg_options(pg_dsn), clock);
          if (!pg.ok()) return pg.status();
          return Broker::open(std::move(pg).value(), broker_options, storage, clock, scheduler);
        }
        case TestEngine::kPostgresShards: {
          // Two databases of the suite's cluster, each a shard: streams spread over both by name.
          if (pg_shards.empty()) {
            pg_shards = {{"a", create_database(shared_cluster_dsn())}, {"b", create_database(shared_cluster_dsn())}};
          }
          auto pg = PgShards::open(pg_shards, pg_options(""), clock);
          if (!pg.ok()) return pg.status();
          return Broker::open(std::move(pg).value(), broker_options, storage, clock, scheduler);
        }
        case TestEngine::kFile:
          break;
      }
      return Broker::open(file_system, dir.path(), broker_options, storage, clock, scheduler);
    }();
    INFO(opened.status().to_string());
    REQUIRE(opened.ok());
    broker = std::move(opened).value();
  }
  void close() {
    if (broker) broker->close();
    broker.reset();
  }
  void reopen() {
    close();
    open();
  }

  void create(const std::string& name, Policy policy = {}) {
    auto created = broker->create_stream(name, policy, false);
    INFO(created.status().to_string());
    REQUIRE(created.ok());
  }

  Result<AppendResult> try_append(const std::string& stream, const std::vector<Rec>& records) {
    std::promise<Result<AppendResult>> done;
    broker->append(stream, inputs(records), [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  AppendResult append(const std::string& stream, const std::vector<Rec>& records) {
    auto r = try_append(stream, records);
    INFO(r.status().to_string());
    REQUIRE(r.ok());
    return *r;
  }

  Status commit(const std::string& stream, const std::string& group, int32_t partition, uint64_t next) {
    std::promise<Status> done;
    broker->commit(stream, group, PartitionId(partition), Offset(next), [&](Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  // Offsets and payloads of partition p from `from` on.
  std::vector<std::pair<uint64_t, std::string>> read(const std::string& stream, int32_t p, uint64_t from = 0) {
    auto r = broker->read(stream, {{PartitionId(p), Offset(from)}}, 100000, 0);
    REQUIRE(r.ok());
    INFO((*r)[0].status.to_string());
    REQUIRE((*r)[0].status.ok());
    std::vector<std::pair<uint64_t, std::string>> out;
    for (const auto& e : (*r)[0].result.entries) out.emplace_back(e.offset.value, std::string(e.payload));
    return out;
  }

  Bounds bounds(const std::string& stream, int32_t p) {
    auto b = broker->bounds(stream, PartitionId(p));
    REQUIRE(b.ok());
    return *b;
  }

  TestEngine engine = TestEngine::kFile;
  uint64_t memory_max_bytes = 1ull << 30;  // the memory engine's capacity, from the next open()
  std::string pg_dsn;                      // the postgres engine's database, made at the first open()
  std::vector<PgShardSpec> pg_shards;      // the two-shard engine's databases, made at the first open()
  std::chrono::milliseconds pg_poll_interval{250};
  bool pg_notify = true;
  std::chrono::milliseconds pg_reply_timeout{30000};
  std::chrono::milliseconds pg_resend_unknown_for{20000};
  // The postgres engines' options, from the pg_* fields above.
  PgEngineOptions pg_options(const std::string& dsn) const {
    PgEngineOptions o;
    o.dsn = dsn;
    o.pool = 4;
    o.poll_interval = pg_poll_interval;
    o.notify = pg_notify;
    o.reply_timeout = pg_reply_timeout;
    o.resend_unknown_for = pg_resend_unknown_for;
    return o;
  }
  BrokerOptions broker_options;
  FileSystem& file_system;
  TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  ManualScheduler scheduler;
  std::unique_ptr<Broker> broker;
};

// Checks an error's code and every field named (other fields may be present).
inline void check_error(const Status& s, Code code, const Fields& fields) {
  INFO(s.to_string());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  for (const auto& [k, v] : fields) {
    INFO("field " << k);
    CHECK(s.field(k) == v);
  }
}

// Neither NOTIFY nor, within a test, a poll: a PostgreSQL broker learns only what it asks the database
// itself.
constexpr auto kNeverPolls = std::chrono::hours(1);

// Waits (at most `timeout`) until `pred` holds.
template <typename Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace streamd::testing

// The engines of the conformance suite, named for what a failing test's name should say.
struct OnFiles {
  static constexpr streamd::testing::TestEngine kEngine = streamd::testing::TestEngine::kFile;
};
struct InMemory {
  static constexpr streamd::testing::TestEngine kEngine = streamd::testing::TestEngine::kMemory;
};
struct OnPostgres {
  static constexpr streamd::testing::TestEngine kEngine = streamd::testing::TestEngine::kPostgres;
};
struct OnTwoShards {
  static constexpr streamd::testing::TestEngine kEngine = streamd::testing::TestEngine::kPostgresShards;
};
#define ENGINE_TEST_CASE(name) \
  TEMPLATE_TEST_CASE(name, "[conformance]", OnFiles, InMemory, OnPostgres, OnTwoShards)
