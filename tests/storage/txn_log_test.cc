// server/storage/txn_log.cc: what the coordinator keeps of each transactional id survives a reopen, a
// transaction's partitions, groups and staged offsets go when it ends, and a rewrite keeps exactly the
// live state.
#include "server/storage/txn_log.h"

#include <catch2/catch.hpp>
#include <future>

#include "tests/support/fault_injection_fs.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"
#include "tests/support/txn_offset.h"

namespace streamd {
namespace {

using testing::offset_of;
using testing::txn_header;

std::unique_ptr<TxnLog> open_txns(const std::string& dir, Executor& executor, RecordLogOptions options = {}) {
  auto log = TxnLog::open(posix_file_system(), dir, executor, options);
  INFO(log.status().to_string());
  REQUIRE(log.ok());
  return std::move(log).value();
}

// Runs one change and waits for it to be durable.
template <typename F>
void wait(F&& change) {
  std::promise<Status> done;
  change([&](Status s) { done.set_value(std::move(s)); });
  REQUIRE(done.get_future().get().ok());
}

TEST_CASE("txn log: an open transaction's partitions, groups and offsets survive a reopen") {
  testing::TempDir dir;
  ThreadPool pool(2);
  {
    auto txns = open_txns(dir.path(), pool);
    wait([&](auto d) { txns->set(txn_header("app-1", TxnStatus::kOngoing), d); });
    const std::vector<TxnPartition> orders{{"orders", 0}, {"orders", 2}};
    const std::vector<TxnPartition> audit{{"audit", 1}};
    wait([&](auto d) { txns->add_partitions("app-1", orders, d); });
    wait([&](auto d) { txns->add_partitions("app-1", audit, d); });
    wait([&](auto d) { txns->add_group("app-1", "billing", d); });
    const TxnOffset first = offset_of("billing", "input", 3, 10, "m");
    const TxnOffset second = offset_of("billing", "input", 3, 12, "");
    wait([&](auto d) { txns->stage_offset("app-1", first, d); });
    // A later staging on the same group and partition replaces the earlier one.
    wait([&](auto d) { txns->stage_offset("app-1", second, d); });
    wait([&](auto d) { txns->set(txn_header("app-2", TxnStatus::kEmpty, 3), d); });
  }
  auto txns = open_txns(dir.path(), pool);
  const auto e = txns->find("app-1");
  REQUIRE(e);
  CHECK(e->header == txn_header("app-1", TxnStatus::kOngoing));
  CHECK(e->partitions == std::set<TxnPartition>{{"audit", 1}, {"orders", 0}, {"orders", 2}});
  CHECK(e->groups == std::set<std::string>{"billing"});
  CHECK(e->offsets == std::vector<TxnOffset>{offset_of("billing", "input", 3, 12, "")});
  CHECK(txns->find("app-2")->header.epoch == 3);
  CHECK(txns->list().size() == 2);
  CHECK_FALSE(txns->find("app-3"));
}

TEST_CASE(
    "txn log: a transaction that ends leaves nothing of its partitions and offsets, and forget removes the "
    "id") {
  testing::TempDir dir;
  ThreadPool pool(2);
  {
    auto txns = open_txns(dir.path(), pool);
    wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kOngoing), d); });
    const std::vector<TxnPartition> one{{"s", 0}};
    wait([&](auto d) { txns->add_partitions("app", one, d); });
    const TxnOffset staged = offset_of("g", "in", 0, 5, "");
    wait([&](auto d) { txns->stage_offset("app", staged, d); });
    wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kPrepareCommit), d); });
    // Deciding keeps them: the restart that finds PrepareCommit writes the markers and offsets.
    CHECK(txns->find("app")->partitions.size() == 1);
    wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kCompleteCommit), d); });
    CHECK(txns->find("app")->partitions.empty());
    CHECK(txns->find("app")->offsets.empty());
    wait([&](auto d) { txns->set(txn_header("gone", TxnStatus::kEmpty), d); });
    wait([&](auto d) { txns->forget("gone", d); });
  }
  auto txns = open_txns(dir.path(), pool);
  REQUIRE(txns->find("app"));
  CHECK(txns->find("app")->header.status == TxnStatus::kCompleteCommit);
  CHECK(txns->find("app")->partitions.empty());
  CHECK_FALSE(txns->find("gone"));
}

TEST_CASE("txn log: many transactions over a few ids are rewritten to their live state") {
  testing::TempDir dir;
  ThreadPool pool(2);
  RecordLogOptions options;
  options.rewrite_min_bytes = 256;
  {
    auto txns = open_txns(dir.path(), pool, options);
    for (int i = 0; i < 200; ++i) {
      const std::string id = "app-" + std::to_string(i % 3);
      wait([&](auto d) { txns->set(txn_header(id, TxnStatus::kOngoing, static_cast<int16_t>(i)), d); });
      const std::vector<TxnPartition> one{{"s", i % 4}};
      wait([&](auto d) { txns->add_partitions(id, one, d); });
      wait([&](auto d) { txns->set(txn_header(id, TxnStatus::kCompleteAbort, static_cast<int16_t>(i)), d); });
    }
    // 600 records, kept to a few: three headers, the last transaction's records at most.
    CHECK(txns->log_bytes() < 512);
  }
  auto txns = open_txns(dir.path(), pool, options);
  REQUIRE(txns->list().size() == 3);
  CHECK(txns->find("app-1")->header.epoch == 199);
  CHECK(txns->find("app-1")->header.status == TxnStatus::kCompleteAbort);
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

// live_bytes() is kept as entries change; it must always be the size of what a rewrite would write.
TEST_CASE("txn log: live_bytes() follows every change, in memory and on file, and after a reopen") {
  testing::TempDir dir;
  ThreadPool pool(2);
  auto check_live = [](const TxnLog& txns) {
    std::string live;
    txns.live_records(live);
    CHECK(txns.live_bytes() == live.size());
  };
  auto changes = [&](TxnLog& txns) {
    check_live(txns);
    wait([&](auto d) { txns.set(txn_header("a", TxnStatus::kOngoing), d); });
    check_live(txns);
    wait([&](auto d) { txns.add_partitions("a", {{"orders", 0}, {"orders", 1}}, d); });
    wait([&](auto d) { txns.add_partitions("a", {{"orders", 1}, {"audit", 0}}, d); });  // one known already
    wait([&](auto d) { txns.add_group("a", "billing", d); });
    wait([&](auto d) { txns.stage_offset("a", offset_of("billing", "input", 0, 5, "meta"), d); });
    wait([&](auto d) { txns.stage_offset("a", offset_of("billing", "input", 0, 9, ""), d); });  // replaces
    check_live(txns);
    wait([&](auto d) { txns.set(txn_header("b", TxnStatus::kEmpty), d); });
    wait([&](auto d) { txns.set(txn_header("a", TxnStatus::kCompleteCommit), d); });  // drops the transaction's
    check_live(txns);
    wait([&](auto d) { txns.forget("b", d); });
    check_live(txns);
    CHECK(txns.size() == 1);
  };
  changes(*TxnLog::in_memory());
  {
    auto txns = open_txns(dir.path(), pool);
    changes(*txns);
    wait([&](auto d) { txns->set(txn_header("c", TxnStatus::kOngoing), d); });
    wait([&](auto d) { txns->add_partitions("c", {{"orders", 3}}, d); });
  }
  auto reopened = open_txns(dir.path(), pool);
  check_live(*reopened);
  CHECK(reopened->size() == 2);
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

// TxnLog::join and TxnLog::end on files: shown and answered before their sync, kept by the log's order;
// one the disk refused leaves the log refusing every later change, since what it shows is no longer
// what the file holds.
TEST_CASE("txn log: a join and an end are shown at once, and one that fails to be written fails the log") {
  testing::TempDir dir;
  ThreadPool pool(2);
  testing::FaultInjectionFileSystem fs;
  auto open_on_fs = [&] {
    auto log = TxnLog::open(fs, dir.path(), pool);
    REQUIRE(log.ok());
    return std::move(log).value();
  };
  auto answered_at_once = [](const std::function<void(TxnLog::Done)>& change) {
    std::optional<Status> answer;
    change([&](Status s) { answer = std::move(s); });
    REQUIRE(answer);
    return *answer;
  };
  {
    auto txns = open_on_fs();
    wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kEmpty), d); });
    CHECK(answered_at_once([&](auto d) {
            txns->join(txn_header("app", TxnStatus::kOngoing), "app", {{"s", 0}, {"s", 1}}, d);
          }).ok());
    CHECK(txns->find("app")->header.status == TxnStatus::kOngoing);
    CHECK(answered_at_once([&](auto d) { txns->join(std::nullopt, "app", {{"t", 0}}, d); }).ok());
    CHECK(txns->find("app")->partitions.size() == 3);
    // The decision waits for its sync, which covers the joins before it.
    wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kPrepareCommit), d); });
    CHECK(answered_at_once([&](auto d) { txns->end(txn_header("app", TxnStatus::kCompleteCommit), d); }).ok());
    CHECK(txns->find("app")->partitions.empty());
    // Later records are durable only after it, so a change that waits makes it durable too.
    wait([&](auto d) { txns->set(txn_header("other", TxnStatus::kEmpty), d); });
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  {
    auto txns = open_on_fs();
    CHECK(txns->find("app")->header.status == TxnStatus::kCompleteCommit);
    fs.fail_next_write(ENOSPC, "TRANSACTIONS");
    CHECK(answered_at_once([&](auto d) {
            txns->join(txn_header("app", TxnStatus::kOngoing), "app", {{"s", 0}}, d);
          }).ok());
    std::promise<Status> decided;
    txns->set(txn_header("app", TxnStatus::kPrepareCommit), [&](Status s) { decided.set_value(std::move(s)); });
    CHECK(decided.get_future().get().code() == Code::kStreamBackendFailed);
    CHECK(txns->failed());
    CHECK(answered_at_once([&](auto d) { txns->join(std::nullopt, "app", {{"s", 1}}, d); }).code() ==
          Code::kStreamBackendFailed);
  }
  // Opened again, the log holds what reached the file, and takes changes.
  auto txns = open_on_fs();
  CHECK_FALSE(txns->failed());
  const TxnStatus reopened = txns->find("app")->header.status;
  CHECK((reopened == TxnStatus::kCompleteCommit || reopened == TxnStatus::kPrepareCommit));
  wait([&](auto d) { txns->set(txn_header("app", TxnStatus::kEmpty, 1), d); });
}

}  // namespace
}  // namespace streamd

namespace streamd {
namespace {

// Kafka's AddPartitionsToTxn is followed by the client's produce only once answered, perhaps to a
// broker restarted meanwhile: its join is answered once durable, and a crash after the answer keeps it.
TEST_CASE("txn log: a join answered when durable waits for its sync, and a crash after the answer keeps it") {
  testing::TempDir dir;
  testing::FaultInjectionFileSystem fs;
  testing::ManualExecutor executor;
  {
    auto opened = TxnLog::open(fs, dir.path(), executor);
    REQUIRE(opened.ok());
    auto txns = std::move(opened).value();
    executor.run_all();
    txns->set(txn_header("app", TxnStatus::kEmpty), [](Status s) { REQUIRE(s.ok()); });
    executor.run_all();
    std::optional<Status> joined;
    txns->join(
        txn_header("app", TxnStatus::kOngoing), "app", {{"s", 0}, {"s", 1}},
        [&](Status s) { joined = std::move(s); }, JoinAnswer::kWhenDurable);
    CHECK_FALSE(joined);
    CHECK(txns->find("app")->partitions.size() == 2);  // shown at once, as every join on files
    executor.run_all();                                 // the write and its sync
    REQUIRE(joined);
    CHECK(joined->ok());
  }
  REQUIRE(fs.drop_unsynced_data().ok());  // a power cut right after the answer
  auto reopened = TxnLog::open(fs, dir.path(), executor);
  REQUIRE(reopened.ok());
  const std::optional<TxnEntry> app = (*reopened)->find("app");
  REQUIRE(app);
  CHECK(app->header.status == TxnStatus::kOngoing);
  CHECK(app->partitions == std::set<TxnPartition>{{"s", 0}, {"s", 1}});
  executor.run_all();
  (*reopened)->close();
}

// A marker names the producer and epoch, not the transaction: were the next transaction's batches
// written before the end of this one is durable, a restart that completed this one's decision again
// would end the next one on a partition both wrote to. So the id's next join waits for the end.
TEST_CASE("txn log: an id's next join waits until its end is durable, other ids' joins do not") {
  testing::TempDir dir;
  testing::ManualExecutor executor;
  auto txns = open_txns(dir.path(), executor);
  executor.run_all();
  txns->set(txn_header("app", TxnStatus::kPrepareCommit), [](Status s) { REQUIRE(s.ok()); });
  txns->set(txn_header("other", TxnStatus::kEmpty), [](Status s) { REQUIRE(s.ok()); });
  executor.run_all();
  std::optional<Status> ended;
  txns->end(txn_header("app", TxnStatus::kCompleteCommit), [&](Status s) { ended = std::move(s); });
  REQUIRE(ended);
  CHECK(ended->ok());
  std::optional<Status> joined;
  txns->join(txn_header("app", TxnStatus::kOngoing), "app", {{"s", 0}}, [&](Status s) { joined = std::move(s); });
  std::optional<Status> other_joined;
  txns->join(txn_header("other", TxnStatus::kOngoing), "other", {{"s", 1}},
             [&](Status s) { other_joined = std::move(s); });
  CHECK(other_joined);
  CHECK_FALSE(joined);
  CHECK(txns->find("app")->header.status == TxnStatus::kCompleteCommit);
  executor.run_all();  // the end's write and sync
  REQUIRE(joined);
  CHECK(joined->ok());
  CHECK(txns->find("app")->header.status == TxnStatus::kOngoing);
  executor.run_all();
  txns->close();
}

}  // namespace
}  // namespace streamd
