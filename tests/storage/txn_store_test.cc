// server/storage/txn_log.h over a TxnStore (the PostgreSQL engine's rows, here a map): each id's state
// is kept whole in its row and read back by a new log; changes an id gets in parallel are written one
// after another; a log whose view is stale writes nothing, takes the row it met and answers
// CONCURRENT_TRANSACTIONS; refresh() takes what other writers kept.
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <mutex>

#include "server/storage/executor.h"
#include "server/storage/txn_log.h"
#include "tests/support/txn_offset.h"

namespace streamd {
namespace {

using testing::offset_of;
using testing::txn_header;

// Rows in a map, written on a thread pool as the database's are on the engine's threads.
struct SharedRows {
  std::mutex mu;
  std::map<std::string, TxnStore::Row> rows;
  uint64_t last_version = 0;
  size_t writes = 0;
};

class MapStore final : public TxnStore {
 public:
  MapStore(SharedRows& shared, Executor& executor) : shared_(shared), executor_(executor) {}

  Result<std::vector<Row>> load() override {
    std::lock_guard lock(shared_.mu);
    std::vector<Row> out;
    for (const auto& [id, row] : shared_.rows) out.push_back(row);
    return out;
  }

  void write(const std::string& id, uint64_t version, std::string records, std::optional<End> /*end*/,
             std::function<void(Written)> done) override {
    executor_.post([this, id, version, records = std::move(records), done = std::move(done)] {
      Written w;
      {
        std::lock_guard lock(shared_.mu);
        ++shared_.writes;
        auto it = shared_.rows.find(id);
        const uint64_t kept = it == shared_.rows.end() ? 0 : it->second.version;
        if (kept != version) {
          w.conflict = true;
          if (it != shared_.rows.end()) w.row = it->second;
        } else if (records.empty()) {
          shared_.rows.erase(id);
        } else {
          Row row{id, ++shared_.last_version, records};
          shared_.rows[id] = row;
          w.row = row;
        }
      }
      done(std::move(w));
    });
  }

 private:
  SharedRows& shared_;
  Executor& executor_;
};

std::unique_ptr<TxnLog> over(SharedRows& shared, Executor& executor) {
  auto log = TxnLog::over(std::make_unique<MapStore>(shared, executor));
  REQUIRE(log.ok());
  return std::move(log).value();
}

template <typename F>
Status wait_status(F&& change) {
  std::promise<Status> done;
  change([&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_CASE("txn store: each id's state is kept whole in its row and read back by a new log") {
  SharedRows shared;
  ThreadPool pool(2);
  {
    auto txns = over(shared, pool);
    REQUIRE(wait_status([&](auto d) { txns->set(txn_header("app-1", TxnStatus::kOngoing), d); }).ok());
    REQUIRE(wait_status([&](auto d) { txns->add_partitions("app-1", {{"orders", 0}, {"audit", 1}}, d); }).ok());
    REQUIRE(wait_status([&](auto d) { txns->add_group("app-1", "billing", d); }).ok());
    REQUIRE(wait_status([&](auto d) { txns->stage_offset("app-1", offset_of("billing", "in", 0, 9, "m"), d); }).ok());
    REQUIRE(wait_status([&](auto d) { txns->set(txn_header("gone", TxnStatus::kEmpty), d); }).ok());
    REQUIRE(wait_status([&](auto d) { txns->forget("gone", d); }).ok());
  }
  CHECK(shared.rows.size() == 1);
  auto txns = over(shared, pool);
  const auto e = txns->find("app-1");
  REQUIRE(e);
  CHECK(e->header == txn_header("app-1", TxnStatus::kOngoing));
  CHECK(e->partitions == std::set<TxnPartition>{{"audit", 1}, {"orders", 0}});
  CHECK(e->groups == std::set<std::string>{"billing"});
  CHECK(e->offsets == std::vector<TxnOffset>{offset_of("billing", "in", 0, 9, "m")});
  CHECK_FALSE(txns->find("gone"));
  CHECK(txns->size() == 1);
}

TEST_CASE("txn store: changes an id gets in parallel are written one after another, none lost") {
  SharedRows shared;
  ThreadPool pool(4);
  auto txns = over(shared, pool);
  REQUIRE(wait_status([&](auto d) { txns->set(txn_header("app", TxnStatus::kOngoing), d); }).ok());
  REQUIRE(wait_status([&](auto d) { txns->add_group("app", "g", d); }).ok());
  constexpr int kOffsets = 20;
  std::vector<std::promise<Status>> done(kOffsets);
  for (int i = 0; i < kOffsets; ++i) {
    txns->stage_offset("app", offset_of("g", "in", i, 100 + i, ""), [&done, i](Status s) { done[i].set_value(s); });
  }
  for (auto& d : done) CHECK(d.get_future().get().ok());
  CHECK(txns->find("app")->offsets.size() == kOffsets);
  auto reopened = over(shared, pool);
  CHECK(reopened->find("app")->offsets.size() == kOffsets);
}

TEST_CASE("txn store: a stale log writes nothing, takes the row it met and answers CONCURRENT_TRANSACTIONS") {
  SharedRows shared;
  ThreadPool pool(2);
  auto first = over(shared, pool);
  REQUIRE(wait_status([&](auto d) { first->set(txn_header("app", TxnStatus::kEmpty, 0), d); }).ok());
  auto second = over(shared, pool);  // sees epoch 0
  REQUIRE(wait_status([&](auto d) { first->set(txn_header("app", TxnStatus::kEmpty, 1), d); }).ok());

  // The second log's change was made from epoch 0: refused, and its view is the row's now.
  const Status stale = wait_status([&](auto d) { second->set(txn_header("app", TxnStatus::kOngoing, 0), d); });
  CHECK(stale.code() == Code::kConcurrentTransactions);
  CHECK(second->find("app")->header == txn_header("app", TxnStatus::kEmpty, 1));
  CHECK(shared.rows.at("app").records.size() > 0);
  CHECK(first->find("app")->header.epoch == 1);
  // Its retry, from the state it took, lands.
  REQUIRE(wait_status([&](auto d) { second->set(txn_header("app", TxnStatus::kOngoing, 1), d); }).ok());

  // And the first learns of it at its next refresh.
  CHECK(first->find("app")->header.status == TxnStatus::kEmpty);
  REQUIRE(first->refresh().ok());
  CHECK(first->find("app")->header == txn_header("app", TxnStatus::kOngoing, 1));
  // An id the first never saw is taken too.
  REQUIRE(wait_status([&](auto d) { second->set(txn_header("other", TxnStatus::kEmpty), d); }).ok());
  REQUIRE(first->refresh().ok());
  CHECK(first->find("other"));
}

}  // namespace
}  // namespace streamd
