// server/broker/txn/txn_coordinator.cc over a real TxnLog and fake effects: Kafka's coordinator rules
// case by case — producers and epochs, the transaction's steps, markers and offsets on end, fencing by
// a new instance and by a timeout, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE,
// CONCURRENT_TRANSACTIONS, and completion after a failure and after a restart.
#include "server/broker/txn/txn_coordinator.h"

#include <catch2/catch.hpp>
#include <future>
#include <mutex>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/txn_offset.h"

namespace streamd {
namespace {

using testing::offset_of;

struct Marker {
  TxnPartition at;
  ProducerIdentity producer;
  bool commit = false;
  bool operator==(const Marker&) const = default;
};

// Producer ids from 1000 on; markers and offsets recorded in the order they came. With `hold`, marker
// writes wait until release_markers(); with `fail_markers`, they fail.
struct FakeEffects final : TxnEffects {
  std::mutex mu;
  int64_t next_id = 1000;
  std::vector<Marker> markers;
  std::vector<TxnOffset> offsets;
  std::vector<std::string> order;  // "marker" or "offset"
  bool hold = false;
  bool fail_markers = false;
  std::vector<std::function<void(Status)>> held;

  Result<ProducerIdentity> new_producer(std::optional<ProducerIdentity> /*current*/) override {
    std::lock_guard lock(mu);
    return ProducerIdentity{next_id++, 0};
  }
  void write_marker(const TxnPartition& at, ProducerIdentity p, bool commit,
                    std::function<void(Status)> done) override {
    {
      std::lock_guard lock(mu);
      if (hold) {
        held.push_back(std::move(done));
        markers.push_back({at, p, commit});
        return;
      }
      if (!fail_markers) {
        markers.push_back({at, p, commit});
        order.emplace_back("marker");
      }
    }
    done(fail_markers ? Status(Code::kStreamBackendFailed, "disk") : Status());
  }
  void commit_offset(const TxnOffset& o, std::function<void(Status)> done) override {
    {
      std::lock_guard lock(mu);
      offsets.push_back(o);
      order.emplace_back("offset");
    }
    done(Status());
  }
  void release_markers() {
    std::vector<std::function<void(Status)>> now;
    {
      std::lock_guard lock(mu);
      now.swap(held);
      hold = false;
    }
    for (auto& d : now) d(Status());
  }
};

struct Coordinator {
  testing::TempDir dir;
  ThreadPool pool{2};
  ManualClock clock{Timestamp(1'000'000)};
  FakeEffects effects;
  std::unique_ptr<TxnLog> log;
  std::unique_ptr<TxnCoordinator> txn;
  TxnLimits limits;

  Coordinator() { open(); }
  void open() {
    txn.reset();
    log.reset();
    auto opened = TxnLog::open(posix_file_system(), dir.path(), pool);
    REQUIRE(opened.ok());
    log = std::move(opened).value();
    txn = std::make_unique<TxnCoordinator>(*log, effects, clock, limits);
  }
  Result<ProducerIdentity> init(const std::string& id, int32_t timeout_ms = 60'000,
                                std::optional<ProducerIdentity> current = std::nullopt) {
    std::promise<Result<ProducerIdentity>> done;
    txn->init_producer(id, timeout_ms, current,
                       [&](Result<ProducerIdentity> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  template <typename F>
  Status run(F&& op) {
    std::promise<Status> done;
    op([&](Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }
  Status add(const std::string& id, ProducerIdentity p, std::vector<TxnPartition> parts) {
    return run([&](auto d) { txn->add_partitions(id, p, std::move(parts), d); });
  }
  Status end(const std::string& id, ProducerIdentity p, bool commit) {
    return run([&](auto d) { txn->end(id, p, commit, d); });
  }
  TxnStatus status(const std::string& id) { return log->find(id)->header.status; }
};

TEST_CASE("txn coordinator: a new id gets a producer id, each init the next epoch, timeouts bounded") {
  Coordinator c;
  auto first = c.init("app");
  REQUIRE(first.ok());
  CHECK(*first == ProducerIdentity{1000, 0});
  auto second = c.init("app");
  REQUIRE(second.ok());
  CHECK(*second == ProducerIdentity{1000, 1});
  CHECK(c.init("other")->id == 1001);
  CHECK(c.init("app", 0).status().code() == Code::kInvalidTransactionTimeout);
  CHECK(c.init("app", 16 * 60 * 1000).status().code() == Code::kInvalidTransactionTimeout);
  // KIP-360: a producer asking for its next epoch must still be the current one.
  CHECK(c.init("app", 60'000, ProducerIdentity{1000, 0}).status().code() == Code::kProducerFenced);
  CHECK(c.init("app", 60'000, ProducerIdentity{1000, 1})->epoch == 2);
}

TEST_CASE("txn coordinator: commit writes every marker, then the staged offsets, then the end") {
  Coordinator c;
  const ProducerIdentity p = *c.init("app");
  REQUIRE(c.add("app", p, {{"out", 0}, {"out", 1}}).ok());
  CHECK(c.status("app") == TxnStatus::kOngoing);
  REQUIRE(c.txn->begin_produce("app", p, {"out", 1}).ok());
  // While the append is under way the transaction is not ended, but partitions are still added to it.
  CHECK(c.end("app", p, true).code() == Code::kConcurrentTransactions);
  REQUIRE(c.add("app", p, {{"audit", 0}, {"out", 0}}).ok());
  c.txn->end_produce("app");
  CHECK(c.txn->begin_produce("app", p, {"out", 2}).code() == Code::kInvalidTxnState);
  // Offsets need their group added first.
  const std::vector<TxnOffset> offsets{offset_of("", "in", 0, 7, "m")};
  CHECK(c.run([&](auto d) { c.txn->stage_offsets("app", p, "billing", offsets, d); }).code() ==
        Code::kInvalidTxnState);
  REQUIRE(c.run([&](auto d) { c.txn->add_group("app", p, "billing", d); }).ok());
  REQUIRE(c.run([&](auto d) { c.txn->stage_offsets("app", p, "billing", offsets, d); }).ok());
  REQUIRE(c.end("app", p, true).ok());
  CHECK(c.effects.markers ==
        std::vector<Marker>{{{"audit", 0}, p, true}, {{"out", 0}, p, true}, {{"out", 1}, p, true}});
  CHECK(c.effects.offsets == std::vector<TxnOffset>{offset_of("billing", "in", 0, 7, "m")});
  CHECK(c.effects.order == std::vector<std::string>{"marker", "marker", "marker", "offset"});
  CHECK(c.status("app") == TxnStatus::kCompleteCommit);
  CHECK(c.txn->begin_produce("app", p, {"out", 1}).code() == Code::kInvalidTxnState);
  // A retry of the commit is answered; an abort of nothing is not.
  CHECK(c.end("app", p, true).ok());
  CHECK(c.end("app", p, false).code() == Code::kInvalidTxnState);
  CHECK(c.effects.markers.size() == 3);
  // The next transaction of the same producer.
  REQUIRE(c.add("app", p, {{"out", 3}}).ok());
  REQUIRE(c.end("app", p, false).ok());
  CHECK(c.effects.markers.back() == Marker{{"out", 3}, p, false});
  CHECK(c.effects.offsets.size() == 1);
}

TEST_CASE("txn coordinator: a new instance aborts what the old one left open, with a bump that fences it") {
  Coordinator c;
  const ProducerIdentity old = *c.init("app");
  REQUIRE(c.add("app", old, {{"out", 0}}).ok());
  const ProducerIdentity fresh = *c.init("app");
  CHECK(fresh == ProducerIdentity{old.id, 2});
  CHECK(c.effects.markers == std::vector<Marker>{{{"out", 0}, {old.id, 1}, false}});
  CHECK(c.add("app", old, {{"out", 1}}).code() == Code::kProducerFenced);
  CHECK(c.end("app", old, true).code() == Code::kProducerFenced);
  CHECK(c.txn->begin_produce("app", old, {"out", 0}).code() == Code::kProducerFenced);
  CHECK(c.add("app", {old.id + 1, 2}, {{"out", 1}}).code() == Code::kInvalidProducerIdMapping);
  CHECK(c.add("nobody", fresh, {{"out", 1}}).code() == Code::kInvalidProducerIdMapping);
}

TEST_CASE("txn coordinator: a transaction past its timeout is aborted with an epoch bump") {
  Coordinator c;
  const ProducerIdentity p = *c.init("slow", 1'000);
  const ProducerIdentity q = *c.init("quick", 60'000);
  REQUIRE(c.add("slow", p, {{"out", 0}}).ok());
  REQUIRE(c.add("quick", q, {{"out", 1}}).ok());
  c.clock.advance(std::chrono::seconds(2));
  REQUIRE(c.run([&](auto d) { c.txn->expire(c.clock.now(), d); }).ok());
  CHECK(c.status("slow") == TxnStatus::kCompleteAbort);
  CHECK(c.status("quick") == TxnStatus::kOngoing);
  CHECK(c.effects.markers == std::vector<Marker>{{{"out", 0}, {p.id, 1}, false}});
  CHECK(c.end("slow", p, true).code() == Code::kProducerFenced);
  CHECK(c.init("slow", 1'000)->epoch == 2);
}

TEST_CASE(
    "txn coordinator: while a transaction is being ended, the id's requests are CONCURRENT_TRANSACTIONS") {
  Coordinator c;
  const ProducerIdentity p = *c.init("app");
  REQUIRE(c.add("app", p, {{"out", 0}}).ok());
  c.effects.hold = true;
  std::promise<Status> ended;
  c.txn->end("app", p, true, [&](Status s) { ended.set_value(std::move(s)); });
  // The decision is durable before the marker is asked for: wait for it.
  for (int i = 0; i < 500 && c.status("app") != TxnStatus::kPrepareCommit; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(c.status("app") == TxnStatus::kPrepareCommit);
  CHECK(c.add("app", p, {{"out", 1}}).code() == Code::kConcurrentTransactions);
  CHECK(c.txn->begin_produce("app", p, {"out", 0}).code() == Code::kConcurrentTransactions);
  CHECK(c.end("app", p, true).code() == Code::kConcurrentTransactions);
  CHECK(c.init("app").status().code() == Code::kConcurrentTransactions);
  c.effects.release_markers();
  CHECK(ended.get_future().get().ok());
  CHECK(c.status("app") == TxnStatus::kCompleteCommit);
}

TEST_CASE(
    "txn coordinator: a decided transaction is completed by the next end, or by recover after a restart") {
  Coordinator c;
  const ProducerIdentity p = *c.init("app");
  REQUIRE(c.add("app", p, {{"out", 0}}).ok());
  c.effects.fail_markers = true;
  CHECK(c.end("app", p, true).code() == Code::kStreamBackendFailed);
  CHECK(c.status("app") == TxnStatus::kPrepareCommit);
  CHECK(c.end("app", p, false).code() == Code::kInvalidTxnState);  // decided: commit it is
  c.effects.fail_markers = false;
  REQUIRE(c.end("app", p, true).ok());
  CHECK(c.status("app") == TxnStatus::kCompleteCommit);

  REQUIRE(c.add("app", p, {{"out", 1}}).ok());
  c.effects.fail_markers = true;
  CHECK_FALSE(c.end("app", p, false).ok());
  c.open();  // a restart
  CHECK(c.status("app") == TxnStatus::kPrepareAbort);
  c.effects.fail_markers = false;
  REQUIRE(c.run([&](auto d) { c.txn->recover(d); }).ok());
  CHECK(c.status("app") == TxnStatus::kCompleteAbort);
  CHECK(c.effects.markers.back() == Marker{{"out", 1}, p, false});
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

TEST_CASE("txn coordinator: an operator's abort fences the producer, finishes a decided one, refuses the rest") {
  Coordinator c;
  const ProducerIdentity p = c.init("app").value();
  auto abort = [&](const std::string& id) { return c.run([&](auto d) { c.txn->abort(id, d); }); };
  CHECK(abort("nobody").code() == Code::kTransactionalIdNotFound);
  CHECK(abort("app").code() == Code::kInvalidTxnState);  // nothing open

  REQUIRE(c.add("app", p, {{"s", 0}, {"t", 1}}).ok());
  c.clock.advance(std::chrono::seconds(5));
  const TxnOpenSummary open = c.txn->open_summary();
  CHECK(open.open == 1);
  CHECK(open.oldest == std::chrono::seconds(5));
  REQUIRE(abort("app").ok());
  CHECK(c.status("app") == TxnStatus::kCompleteAbort);
  CHECK(c.log->find("app")->header.epoch == p.epoch + 1);
  CHECK(c.effects.markers.size() == 2);
  for (const Marker& m : c.effects.markers) CHECK(m == Marker{m.at, {p.id, int16_t(p.epoch + 1)}, false});
  CHECK(c.end("app", p, true).code() == Code::kProducerFenced);
  CHECK(c.txn->counts().operator_aborts.load() == 1);
  CHECK(c.txn->open_summary().open == 0);

  // A commit decided whose markers failed is finished as a commit.
  const ProducerIdentity q = c.init("app").value();
  REQUIRE(c.add("app", q, {{"s", 0}}).ok());
  c.effects.fail_markers = true;
  CHECK_FALSE(c.end("app", q, true).ok());
  CHECK(c.status("app") == TxnStatus::kPrepareCommit);
  c.effects.fail_markers = false;
  REQUIRE(abort("app").ok());
  CHECK(c.status("app") == TxnStatus::kCompleteCommit);
  CHECK(c.effects.markers.back() == Marker{{"s", 0}, q, true});
  CHECK(c.txn->counts().commits.load() == 1);
  CHECK(c.txn->counts().operator_aborts.load() == 1);
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

TEST_CASE("txn coordinator: ids idle past their expiry are forgotten, open ones never, and a bound on ids") {
  Coordinator c;
  c.limits.max_ids = 2;
  c.limits.id_expiry = std::chrono::hours(1);
  c.limits.max_timeout = std::chrono::hours(24);
  c.open();
  auto expire = [&] { return c.run([&](auto d) { c.txn->expire(c.clock.now(), d); }); };
  const ProducerIdentity idle = c.init("idle").value();
  const ProducerIdentity busy = c.init("busy", 10 * 3600 * 1000).value();
  CHECK(c.init("third").status().code() == Code::kTooManyTransactionalIds);
  REQUIRE(c.end("idle", idle, true).code() == Code::kInvalidTxnState);  // nothing open: still idle

  // "busy" begins a transaction just before the hour is up: open, it is kept however long it runs.
  c.clock.advance(std::chrono::minutes(59));
  REQUIRE(c.add("busy", busy, {{"s", 0}}).ok());
  c.clock.advance(std::chrono::minutes(2));
  REQUIRE(expire().ok());
  CHECK_FALSE(c.log->find("idle"));
  REQUIRE(c.log->find("busy"));
  CHECK(c.txn->counts().expired_ids.load() == 1);
  CHECK(c.txn->ids() == 1);
  // Its producer coming back is told to initialise again, and gets a new producer id.
  CHECK(c.add("idle", idle, {{"s", 0}}).code() == Code::kInvalidProducerIdMapping);
  const ProducerIdentity again = c.init("idle").value();
  CHECK(again.id != idle.id);
  CHECK(c.init("third").status().code() == Code::kTooManyTransactionalIds);

  // Once "busy"'s transaction ends, its hour counts from its begin; initialising refreshes it.
  REQUIRE(c.end("busy", busy, true).ok());
  c.clock.advance(std::chrono::minutes(50));
  REQUIRE(c.init("idle", 60'000, again).ok());
  c.clock.advance(std::chrono::minutes(20));
  REQUIRE(expire().ok());
  CHECK_FALSE(c.log->find("busy"));
  CHECK(c.log->find("idle"));
  // A reopened coordinator keeps what was forgotten forgotten.
  c.open();
  CHECK_FALSE(c.log->find("busy"));
  CHECK(c.txn->ids() == 1);
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

// A restart that finds a partition holding an open transaction of the id's own producer and epoch, which
// the id does not list (the crash took a join answered before it was durable), takes it back.
TEST_CASE("txn coordinator: a partition holding the transaction of an id's producer is adopted, else not") {
  Coordinator c;
  const ProducerIdentity p = *c.init("app");
  auto adopt = [&](const TxnPartition& at, ProducerIdentity who) {
    std::promise<Status> done;
    if (!c.txn->adopt(at, who, [&](Status s) { done.set_value(std::move(s)); })) return false;
    REQUIRE(done.get_future().get().ok());
    return true;
  };
  // No transaction open: the crash took its beginning too.
  REQUIRE(adopt({"out", 0}, p));
  CHECK(c.status("app") == TxnStatus::kOngoing);
  CHECK(adopt({"out", 1}, p));
  CHECK(c.log->find("app")->partitions == std::set<TxnPartition>{{"out", 0}, {"out", 1}});
  // Another epoch, or a producer no id holds: the partition's transaction is no id's.
  CHECK_FALSE(adopt({"out", 2}, ProducerIdentity{p.id, static_cast<int16_t>(p.epoch + 1)}));
  CHECK_FALSE(adopt({"out", 2}, ProducerIdentity{p.id + 1, 0}));
  // Adopted partitions are ended with the transaction.
  c.effects.hold = true;
  std::promise<Status> ended;
  c.txn->end("app", p, true, [&](Status s) { ended.set_value(std::move(s)); });
  for (int i = 0; i < 5000 && c.status("app") != TxnStatus::kPrepareCommit; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(c.status("app") == TxnStatus::kPrepareCommit);
  // A decided transaction lists every partition joined before its decision was durable.
  CHECK_FALSE(adopt({"out", 3}, p));
  c.effects.release_markers();
  REQUIRE(ended.get_future().get().ok());
  CHECK(c.effects.markers == std::vector<Marker>{{{"out", 0}, p, true}, {{"out", 1}, p, true}});
}

}  // namespace
}  // namespace streamd
