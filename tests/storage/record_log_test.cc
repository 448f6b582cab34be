// server/storage/record_log.cc through an owner of its own (GroupOffsets' tests cover torn tails, damage,
// rewrites and a full disk through the groups' log): records replay in order across reopens, a body the
// owner refuses ends the replay as damage, a rewrite keeps only the live records, and `done` runs in
// append order.
#include "server/storage/record_log.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <future>
#include <mutex>

#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

constexpr RecordLogFormat kLogFormat{{'T', 'E', 'S', 'T'}, 1, "LOG", "LOG.tmp", 1024, "test log"};

// A list of strings; a body "bad" does not parse, and only the last `keep` strings are live.
struct ListOwner final : RecordLogOwner {
  std::vector<std::string> items;
  size_t keep = SIZE_MAX;
  bool replay(std::string_view body) override {
    if (body == "bad") return false;
    items.emplace_back(body);
    return true;
  }
  void live_records(std::string& out) const override {
    for (size_t i = items.size() > keep ? items.size() - keep : 0; i < items.size(); ++i)
      RecordLog::frame(out, items[i]);
  }
  uint64_t live_bytes() const override {
    std::string out;
    live_records(out);
    return out.size();
  }
};

std::unique_ptr<RecordLog> open_log(const std::string& dir, Executor& executor, ListOwner& owner,
                                    RecordLogOptions options = {}) {
  auto log = RecordLog::open(posix_file_system(), dir, kLogFormat, executor, options, owner);
  INFO(log.status().to_string());
  REQUIRE(log.ok());
  return std::move(log).value();
}

Status append_and_wait(RecordLog& log, ListOwner& owner, const std::string& body) {
  std::promise<Status> done;
  log.append(body, [&](Status s) {
    if (s.ok()) owner.items.push_back(body);
    done.set_value(std::move(s));
  });
  return done.get_future().get();
}

// Appends each of `bodies` to a log opened in `dir`, then closes it.
void write_log(const std::string& dir, Executor& executor, const std::vector<std::string>& bodies) {
  ListOwner owner;
  auto log = open_log(dir, executor, owner);
  for (const std::string& body : bodies) REQUIRE(append_and_wait(*log, owner, body).ok());
}

TEST_CASE("record log: records replay in order after a reopen, in the format's own file") {
  testing::TempDir dir;
  ThreadPool pool(2);
  write_log(dir.path(), pool, {"one", "two", "three"});
  CHECK(std::filesystem::exists(dir.file("LOG")));
  ListOwner again;
  auto log = open_log(dir.path(), pool, again);
  CHECK(again.items == std::vector<std::string>{"one", "two", "three"});
}

TEST_CASE("record log: appends queued together are answered in the order they were made") {
  testing::TempDir dir;
  ThreadPool pool(2);
  ListOwner owner;
  auto log = open_log(dir.path(), pool, owner);
  std::mutex mu;
  std::vector<int> answered;
  std::vector<std::future<void>> all;
  for (int i = 0; i < 200; ++i) {
    auto done = std::make_shared<std::promise<void>>();
    all.push_back(done->get_future());
    log->append(std::to_string(i), [&, i, done](Status s) {
      CHECK(s.ok());
      std::lock_guard lock(mu);
      answered.push_back(i);
      done->set_value();
    });
  }
  for (auto& f : all) f.get();
  for (int i = 0; i < 200; ++i) CHECK(answered[static_cast<size_t>(i)] == i);
}

TEST_CASE("record log: a body its owner refuses ends the replay there, and what follows is dropped") {
  testing::TempDir dir;
  ThreadPool pool(2);
  write_log(dir.path(), pool, {"one", "bad", "three"});
  ListOwner again;
  auto log = open_log(dir.path(), pool, again);
  CHECK(again.items == std::vector<std::string>{"one"});
  // The log was rewritten from what was kept: the next open finds the same, and appends go on.
  REQUIRE(append_and_wait(*log, again, "four").ok());
  log.reset();
  ListOwner third;
  open_log(dir.path(), pool, third);
  CHECK(third.items == std::vector<std::string>{"one", "four"});
}

TEST_CASE("record log: a log grown past twice its live records is rewritten to them") {
  testing::TempDir dir;
  ThreadPool pool(2);
  ListOwner owner;
  owner.keep = 1;
  RecordLogOptions options;
  options.rewrite_min_bytes = 64;
  auto log = open_log(dir.path(), pool, owner, options);
  for (int i = 0; i < 20; ++i) REQUIRE(append_and_wait(*log, owner, "record-" + std::to_string(i)).ok());
  CHECK(log->log_bytes() < 8 + 3 * RecordLog::framed_size(9));
  log.reset();
  ListOwner again;
  open_log(dir.path(), pool, again);
  REQUIRE_FALSE(again.items.empty());
  CHECK(again.items.back() == "record-19");
}

}  // namespace
}  // namespace streamd
