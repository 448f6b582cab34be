#include "server/storage/group_commit.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/manual_executor.h"

namespace streamd {
namespace {

using testing::ManualExecutor;

// One item: its id, and where its answer goes.
struct Item {
  int id;
  std::function<void(Status)> done;
};

// A log whose write function records each group and answers items as a test says.
struct Log {
  explicit Log(Executor& executor)
      : commit(executor, Status(Code::kUnavailable, "closed"), [this](std::vector<Item>& group) { write(group); }) {}

  void submit(int id) {
    commit.submit(Item{id, [this, id](Status s) { answers.emplace_back(id, std::move(s)); }});
  }

  void write(std::vector<Item>& group) {
    std::vector<int> ids;
    for (const Item& item : group) ids.push_back(item.id);
    groups.push_back(ids);
    if (on_write) on_write();
    // Items up to fail_at are written; the one there fails, and so does the rest of the group.
    for (size_t i = 0; i < group.size(); ++i) {
      if (fail_at && group[i].id == *fail_at) {
        commit.fail(Status(Code::kStreamBackendFailed, "refused after the failure"));
        const Status failure(Code::kStreamBackendFailed, "the write failed");
        for (size_t j = i; j < group.size(); ++j) group[j].done(failure);
        return;
      }
      group[i].done(Status());
    }
  }

  std::vector<std::vector<int>> groups;
  std::vector<std::pair<int, Status>> answers;
  std::optional<int> fail_at;
  std::function<void()> on_write;
  GroupCommit<Item> commit;
};

std::vector<int> answered_ids(const Log& log) {
  std::vector<int> ids;
  for (const auto& [id, status] : log.answers) ids.push_back(id);
  return ids;
}

TEST_CASE("group commit: items queued during a flush are the next group, in submit order") {
  ManualExecutor executor;
  Log log(executor);
  log.submit(1);
  log.submit(2);
  REQUIRE(executor.pending() == 1);  // one flush, however many items
  CHECK(log.answers.empty());        // nothing is answered before its write
  log.on_write = [&] {
    log.on_write = nullptr;
    log.submit(3);  // arrives while the first group is written
    log.submit(4);
  };
  REQUIRE(executor.run_one());
  CHECK(log.groups == std::vector<std::vector<int>>{{1, 2}});
  CHECK(answered_ids(log) == std::vector<int>{1, 2});
  REQUIRE(executor.pending() == 1);  // the next group is posted, not run in the same task
  executor.run_all();
  CHECK(log.groups == std::vector<std::vector<int>>{{1, 2}, {3, 4}});
  CHECK(answered_ids(log) == std::vector<int>{1, 2, 3, 4});
  for (const auto& [id, status] : log.answers) CHECK(status.ok());
  CHECK(executor.pending() == 0);
}

TEST_CASE("group commit: a busy log's next group queues behind other work on the executor") {
  ManualExecutor executor;
  Log log(executor);
  std::vector<std::string> ran;
  log.submit(1);
  log.on_write = [&] {
    log.on_write = nullptr;
    log.submit(2);
  };
  executor.post([&] { ran.push_back("other"); });
  executor.run_one();  // the log's first group; its next one goes behind "other"
  executor.post([&] { ran.push_back("later"); });
  executor.run_one();
  CHECK(ran == std::vector<std::string>{"other"});
  executor.run_one();
  CHECK(log.groups.size() == 2);
  executor.run_all();
  CHECK(ran == std::vector<std::string>{"other", "later"});
}

TEST_CASE("group commit: after a failure, queued and later items are refused, after the failed group") {
  ManualExecutor executor;
  Log log(executor);
  log.fail_at = 1;
  log.submit(1);
  log.on_write = [&] { log.submit(2); };  // queued while the failing group is written
  executor.run_all();
  CHECK(log.groups == std::vector<std::vector<int>>{{1}});  // 2 never reaches a write
  REQUIRE(log.answers.size() == 2);
  CHECK(log.answers[0].first == 1);
  CHECK(log.answers[0].second.message() == "the write failed");
  CHECK(log.answers[1].first == 2);
  CHECK(log.answers[1].second.message() == "refused after the failure");
  CHECK(log.commit.failed());
  log.submit(3);  // answered at once, with no flush
  CHECK(executor.pending() == 0);
  REQUIRE(log.answers.size() == 3);
  CHECK(log.answers[2].second.code() == Code::kStreamBackendFailed);
}

TEST_CASE("group commit: a flush that fails mid-group answers what it wrote and fails the rest") {
  ManualExecutor executor;
  Log log(executor);
  log.fail_at = 3;
  for (int id = 1; id <= 5; ++id) log.submit(id);
  log.on_write = [&] {
    log.on_write = nullptr;
    log.submit(6);
  };
  executor.run_all();
  REQUIRE(answered_ids(log) == std::vector<int>{1, 2, 3, 4, 5, 6});
  CHECK(log.answers[0].second.ok());
  CHECK(log.answers[1].second.ok());
  for (size_t i = 2; i < 5; ++i) CHECK(log.answers[i].second.message() == "the write failed");
  CHECK(log.answers[5].second.message() == "refused after the failure");
  CHECK(log.groups.size() == 1);
}

TEST_CASE("group commit: close waits for the flush in progress, then refuses") {
  ManualExecutor executor;
  Log log(executor);
  log.submit(1);
  std::atomic<bool> closed{false};
  std::atomic<bool> first_close{false};
  std::thread closer([&] {
    first_close = log.commit.close();
    closed = true;
  });
  // close() cannot return while the queued flush has not run.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(closed.load());
  executor.run_all();
  closer.join();
  CHECK(first_close.load());
  REQUIRE(log.answers.size() == 1);
  CHECK(log.answers[0].second.ok());  // queued before close: written
  log.submit(2);
  REQUIRE(log.answers.size() == 2);
  CHECK(log.answers[1].second.code() == Code::kUnavailable);
  CHECK_FALSE(log.commit.close());  // a second close is no first close
  CHECK_FALSE(log.commit.hold());   // nor may anyone write once closed
}

TEST_CASE("group commit: hold keeps flushes off until release, which flushes what queued meanwhile") {
  ManualExecutor executor;
  Log log(executor);
  REQUIRE(log.commit.hold());
  log.submit(1);
  log.submit(2);
  CHECK(executor.pending() == 0);  // the holder is the writer: no flush is posted
  log.commit.release();
  REQUIRE(executor.pending() == 1);
  executor.run_all();
  CHECK(log.groups == std::vector<std::vector<int>>{{1, 2}});
}

TEST_CASE("group commit: a failure while holding refuses what queued meanwhile on release") {
  ManualExecutor executor;
  Log log(executor);
  REQUIRE(log.commit.hold());
  log.submit(1);
  log.commit.fail(Status(Code::kStreamBackendFailed, "the roll failed"));
  log.commit.release();
  CHECK(executor.pending() == 0);
  REQUIRE(log.answers.size() == 1);
  CHECK(log.answers[0].second.message() == "the roll failed");
  CHECK(log.groups.empty());
}

TEST_CASE("group commit: a deferred group holds the turn until resume, which may come before write returns") {
  ManualExecutor executor;
  std::vector<std::vector<Item>> handed_on;
  bool resume_inside = false;
  std::optional<GroupCommit<Item>> commit;
  commit.emplace(executor, Status(Code::kUnavailable, "closed"), [&](std::vector<Item>& group) {
    commit->defer();
    handed_on.push_back(std::move(group));
    if (resume_inside) {
      for (Item& item : handed_on.back()) item.done(Status());
      commit->resume();
    }
  });
  std::vector<int> answered;
  auto submit = [&](int id) { commit->submit(Item{id, [&answered, id](Status) { answered.push_back(id); }}); };

  submit(1);
  REQUIRE(executor.run_one());
  REQUIRE(handed_on.size() == 1);
  submit(2);
  CHECK(executor.pending() == 0);  // the first group's turn is not over: nothing more is posted
  CHECK_FALSE(commit->idle());
  for (Item& item : handed_on[0]) item.done(Status());
  commit->resume();
  REQUIRE(executor.pending() == 1);  // the turn ended and the waiting item's group is posted

  resume_inside = true;
  REQUIRE(executor.run_one());
  CHECK(answered == std::vector<int>{1, 2});
  CHECK(executor.pending() == 0);
  CHECK(commit->idle());  // resumed inside the write: the flush ended the turn once
  submit(3);
  REQUIRE(executor.run_one());
  CHECK(answered == std::vector<int>{1, 2, 3});
  CHECK(commit->close());
}

}  // namespace
}  // namespace streamd
