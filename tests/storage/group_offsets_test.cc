#include "server/storage/group_offsets.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "tests/support/fault_injection_fs.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::TempDir;

Status commit_and_wait(GroupOffsets& offsets, const std::string& group, int32_t partition, uint64_t next) {
  std::promise<Status> done;
  offsets.commit(group, PartitionId(partition), Offset(next), [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

std::unique_ptr<GroupOffsets> open_offsets(const std::string& dir, Executor& executor,
                                           GroupOffsetsOptions options = {}) {
  auto r = GroupOffsets::open(posix_file_system(), dir, executor, options);
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  return std::move(r).value();
}

uint64_t file_size(const std::string& path) { return std::filesystem::file_size(path); }

TEST_CASE("a group that never committed on a partition has no offset") {
  TempDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  CHECK_FALSE(offsets->committed("g", PartitionId(0)).has_value());
  REQUIRE(commit_and_wait(*offsets, "g", 0, 5).ok());
  CHECK_FALSE(offsets->committed("g", PartitionId(1)).has_value());
  CHECK_FALSE(offsets->committed("h", PartitionId(0)).has_value());
}

TEST_CASE("a commit replaces the group's previous offset, moving forward or back") {
  TempDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  for (uint64_t next : {10u, 20u, 3u, 0u, 7u}) {
    REQUIRE(commit_and_wait(*offsets, "g", 0, next).ok());
    CHECK(offsets->committed("g", PartitionId(0)) == Offset(next));
  }
}

TEST_CASE("list returns every group and partition, ordered") {
  TempDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  REQUIRE(commit_and_wait(*offsets, "b", 1, 4).ok());
  REQUIRE(commit_and_wait(*offsets, "a", 2, 9).ok());
  REQUIRE(commit_and_wait(*offsets, "b", 0, 6).ok());
  REQUIRE(commit_and_wait(*offsets, "a", 2, 8).ok());
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"a", PartitionId(2), Offset(8), ""}, E{"b", PartitionId(0), Offset(6), ""},
                                          E{"b", PartitionId(1), Offset(4), ""}});
}

Status commit_with(GroupOffsets& offsets, const std::string& group, int32_t partition, uint64_t next,
                   std::string metadata) {
  std::promise<Status> done;
  offsets.commit(group, PartitionId(partition), Offset(next), std::move(metadata),
                 [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

Status forget_and_wait(GroupOffsets& offsets, const std::string& group, int32_t partition) {
  std::promise<Status> done;
  offsets.forget(group, PartitionId(partition), [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_CASE("metadata is kept with its commit, forgets remove one partition, both survive a reopen") {
  TempDir dir;
  ThreadPool pool(2);
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_with(*offsets, "g", 0, 42, "consumer state").ok());
    REQUIRE(commit_with(*offsets, "g", 1, 5, "").ok());
    REQUIRE(commit_with(*offsets, "h", 0, 1, std::string("\0bin", 4)).ok());
    REQUIRE(forget_and_wait(*offsets, "g", 1).ok());
    REQUIRE(forget_and_wait(*offsets, "absent", 3).ok());
    CHECK(offsets->find("g", PartitionId(0))->metadata == "consumer state");
    CHECK_FALSE(offsets->committed("g", PartitionId(1)).has_value());
  }
  auto offsets = open_offsets(dir.path(), pool);
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"g", PartitionId(0), Offset(42), "consumer state"},
                                          E{"h", PartitionId(0), Offset(1), std::string("\0bin", 4)}});
  // A plain commit replaces the metadata with none.
  REQUIRE(commit_and_wait(*offsets, "g", 0, 43).ok());
  CHECK(offsets->find("g", PartitionId(0))->metadata.empty());
}

TEST_CASE("a log of type-1 records only, as older versions wrote, still reads") {
  TempDir dir;
  ThreadPool pool(2);
  // docs/FORMAT.md's worked example: group "g" commits next offset 5 on partition 0.
  std::string bytes("SDGO\x01\0\0\0", 8);
  bytes += std::string("\x05\0\0\0\x99\xb8\x06\xc7\x01\x01g\0\x05", 13);
  bytes += std::string(64, '\0');
  {
    std::ofstream out(dir.path() + "/GROUPS", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto offsets = open_offsets(dir.path(), pool);
  auto e = offsets->find("g", PartitionId(0));
  REQUIRE(e.has_value());
  CHECK(e->next == Offset(5));
  CHECK(e->metadata.empty());
}

TEST_CASE("the rewrite keeps metadata and drops forgotten partitions") {
  TempDir dir;
  ThreadPool pool(2);
  GroupOffsetsOptions options;
  options.rewrite_min_bytes = 256;
  auto offsets = open_offsets(dir.path(), pool, options);
  REQUIRE(commit_with(*offsets, "keep", 0, 1, "m1").ok());
  for (int i = 0; i < 40; ++i) {
    REQUIRE(commit_with(*offsets, "churn", 0, static_cast<uint64_t>(i), "some metadata").ok());
    REQUIRE(forget_and_wait(*offsets, "churn", 0).ok());
  }
  CHECK(offsets->log_bytes() < 256 * 2);  // rewritten at least once
  offsets.reset();
  offsets = open_offsets(dir.path(), pool, options);
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"keep", PartitionId(0), Offset(1), "m1"}});
}

TEST_CASE("commits survive a reopen") {
  TempDir dir;
  ThreadPool pool(2);
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "g", 0, 10).ok());
    REQUIRE(commit_and_wait(*offsets, "g", 0, 12).ok());
    REQUIRE(commit_and_wait(*offsets, "other group", 3, 1).ok());
  }
  auto offsets = open_offsets(dir.path(), pool);
  CHECK(offsets->committed("g", PartitionId(0)) == Offset(12));
  CHECK(offsets->committed("other group", PartitionId(3)) == Offset(1));
  CHECK(offsets->list().size() == 2);
}

TEST_CASE("concurrent commits from many groups all land") {
  TempDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  constexpr int kGroups = 16;
  constexpr int kCommits = 50;
  std::atomic<int> failures{0};  // Catch2 assertions belong to the test's own thread
  std::vector<std::thread> threads;
  for (int g = 0; g < kGroups; ++g) {
    threads.emplace_back([&, g] {
      for (int i = 1; i <= kCommits; ++i) {
        if (!commit_and_wait(*offsets, "group-" + std::to_string(g), g % 4, static_cast<uint64_t>(i)).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  for (int g = 0; g < kGroups; ++g) {
    CHECK(offsets->committed("group-" + std::to_string(g), PartitionId(g % 4)) == Offset(kCommits));
  }
}

TEST_CASE("a torn last record is dropped on open and the log stays usable") {
  TempDir dir;
  ThreadPool pool(2);
  const std::string path = dir.file("GROUPS");
  uint64_t size_before_last = 0;
  uint64_t full = 0;
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "g", 0, 1).ok());
    size_before_last = offsets->log_bytes();
    REQUIRE(commit_and_wait(*offsets, "g", 0, 2).ok());
    full = offsets->log_bytes();
  }
  REQUIRE(file_size(path) > full);  // zero-filled ahead
  // Cut the log at every byte inside the last record: each time, the first commit is what survives.
  for (uint64_t cut = size_before_last; cut < full; ++cut) {
    TempDir copy;
    std::filesystem::copy_file(path, copy.file("GROUPS"));
    std::filesystem::resize_file(copy.file("GROUPS"), cut);
    auto offsets = open_offsets(copy.path(), pool);
    INFO("cut at " << cut);
    CHECK(offsets->committed("g", PartitionId(0)) == Offset(1));
    REQUIRE(commit_and_wait(*offsets, "g", 0, 3).ok());
    offsets.reset();
    CHECK(open_offsets(copy.path(), pool)->committed("g", PartitionId(0)) == Offset(3));
  }
}

TEST_CASE("a damaged record followed by others keeps what precedes it") {
  TempDir dir;
  ThreadPool pool(2);
  const std::string path = dir.file("GROUPS");
  uint64_t second_at = 0;
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "a", 0, 1).ok());
    second_at = offsets->log_bytes();
    REQUIRE(commit_and_wait(*offsets, "b", 0, 2).ok());
    REQUIRE(commit_and_wait(*offsets, "c", 0, 3).ok());
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(second_at + 9));
    f.put('\x7f');
  }
  auto offsets = open_offsets(dir.path(), pool);
  CHECK(offsets->committed("a", PartitionId(0)) == Offset(1));
  CHECK_FALSE(offsets->committed("b", PartitionId(0)).has_value());
  CHECK_FALSE(offsets->committed("c", PartitionId(0)).has_value());
}

TEST_CASE("a log with a damaged file header is refused") {
  TempDir dir;
  ThreadPool pool(2);
  std::ofstream(dir.file("GROUPS")) << "NOTAGROUPSLOG";
  auto r = GroupOffsets::open(posix_file_system(), dir.path(), pool);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kStreamBackendFailed);
  CHECK(r.status().field("path") == dir.file("GROUPS"));
}

TEST_CASE("a leftover temp file from an interrupted rewrite is ignored and removed") {
  TempDir dir;
  ThreadPool pool(2);
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "g", 0, 4).ok());
  }
  std::ofstream(dir.file("GROUPS.tmp")) << "half a rewrite";
  auto offsets = open_offsets(dir.path(), pool);
  CHECK(offsets->committed("g", PartitionId(0)) == Offset(4));
  CHECK_FALSE(std::filesystem::exists(dir.file("GROUPS.tmp")));
}

TEST_CASE("the log is rewritten compactly once it outgrows its live size, keeping every offset") {
  TempDir dir;
  ThreadPool pool(2);
  GroupOffsetsOptions options;
  options.rewrite_min_bytes = 512;
  {
    auto offsets = open_offsets(dir.path(), pool, options);
    uint64_t largest = 0;
    for (uint64_t i = 0; i < 200; ++i) {
      REQUIRE(commit_and_wait(*offsets, "g" + std::to_string(i % 3), static_cast<int32_t>(i % 2), i).ok());
      largest = std::max(largest, offsets->log_bytes());
    }
    // 200 records of ~13 bytes would be ~2.6 KB; rewrites keep the log near its six live records.
    CHECK(largest <= 512 + 16);
    CHECK(file_size(dir.file("GROUPS")) >= offsets->log_bytes());
  }
  auto offsets = open_offsets(dir.path(), pool, options);
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"g0", PartitionId(0), Offset(198), ""}, E{"g0", PartitionId(1), Offset(195), ""},
                                          E{"g1", PartitionId(0), Offset(196), ""}, E{"g1", PartitionId(1), Offset(199), ""},
                                          E{"g2", PartitionId(0), Offset(194), ""}, E{"g2", PartitionId(1), Offset(197), ""}});
}

TEST_CASE("commits queued behind one flush share one write and one sync") {
  TempDir dir;
  testing::FaultInjectionFileSystem fs;
  testing::ManualExecutor executor;  // holds the flush so commits pile up behind it
  auto opened = GroupOffsets::open(fs, dir.path(), executor);
  REQUIRE(opened.ok());
  auto& offsets = **opened;
  offsets.commit("warm-up", PartitionId(0), Offset(0), [](Status) {});
  executor.run_all();  // the first flush also zero-fills the file ahead
  fs.reset_counters();
  std::vector<Status> answers;
  for (int g = 0; g < 16; ++g) {
    offsets.commit("g" + std::to_string(g), PartitionId(0), Offset(7), [&](Status s) { answers.push_back(s); });
  }
  CHECK(answers.empty());  // nothing is answered before its sync
  CHECK_FALSE(offsets.committed("g0", PartitionId(0)).has_value());
  REQUIRE(executor.pending() == 1);
  executor.run_all();
  REQUIRE(answers.size() == 16);
  for (const Status& s : answers) CHECK(s.ok());
  CHECK(fs.writes("GROUPS") == 1);
  CHECK(fs.syncs("GROUPS") == 1);
  CHECK(offsets.committed("g15", PartitionId(0)) == Offset(7));
}

TEST_CASE("crash: every answered commit survives losing unsynced data, a failed sync answers nothing") {
  TempDir dir;
  testing::FaultInjectionFileSystem fs;
  ThreadPool pool(2);
  auto open = [&] {
    auto r = GroupOffsets::open(fs, dir.path(), pool);
    REQUIRE(r.ok());
    return std::move(r).value();
  };
  auto offsets = open();
  REQUIRE(commit_and_wait(*offsets, "a", 0, 1).ok());
  REQUIRE(commit_and_wait(*offsets, "b", 1, 2).ok());
  fs.fail_next_sync(EIO, "GROUPS");
  Status failed = commit_and_wait(*offsets, "a", 0, 9);
  CHECK(failed.code() == Code::kStreamBackendFailed);
  CHECK(failed.field("errno") == std::to_string(EIO));
  CHECK(offsets->failed());
  CHECK(commit_and_wait(*offsets, "c", 0, 3).code() == Code::kStreamBackendFailed);
  CHECK(offsets->committed("a", PartitionId(0)) == Offset(1));
  offsets.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  offsets = open();
  CHECK(offsets->committed("a", PartitionId(0)) == Offset(1));
  CHECK(offsets->committed("b", PartitionId(1)) == Offset(2));
  CHECK_FALSE(offsets->committed("c", PartitionId(0)).has_value());
  REQUIRE(commit_and_wait(*offsets, "c", 0, 3).ok());
}

TEST_CASE("crash: a rewrite that fails before its rename loses no commit, and the next one succeeds") {
  TempDir dir;
  testing::FaultInjectionFileSystem fs;
  ThreadPool pool(2);
  GroupOffsetsOptions options;
  options.rewrite_min_bytes = 64;
  auto r = GroupOffsets::open(fs, dir.path(), pool, options);
  REQUIRE(r.ok());
  auto offsets = std::move(r).value();
  for (uint64_t i = 1; i <= 3; ++i) REQUIRE(commit_and_wait(*offsets, "g", 0, i).ok());
  // The next commit crosses the rewrite threshold; its rewrite fails at the temp file's sync.
  fs.fail_next_sync(EIO, "GROUPS.tmp");
  for (uint64_t i = 4; i <= 8; ++i) REQUIRE(commit_and_wait(*offsets, "g", 0, i).ok());
  offsets.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  auto reopened = GroupOffsets::open(fs, dir.path(), pool, options);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->committed("g", PartitionId(0)) == Offset(8));
  CHECK((*reopened)->log_bytes() < 64);
}

TEST_CASE("the zero-filled space after the records is the log's end, not damage") {
  TempDir dir;
  ThreadPool pool(2);
  GroupOffsetsOptions options;
  options.preallocate_bytes = 4096;
  for (int round = 0; round < 3; ++round) {
    auto offsets = open_offsets(dir.path(), pool, options);
    const uint64_t before = offsets->log_bytes();
    CHECK(offsets->list().size() == static_cast<size_t>(round));
    // Read as a clean end, the log is not rewritten (a rewrite would cut the file to its records).
    if (round > 0) CHECK(file_size(dir.file("GROUPS")) >= 4096);
    REQUIRE(commit_and_wait(*offsets, "g" + std::to_string(round), 0, 1).ok());
    CHECK(offsets->log_bytes() > before);
    CHECK(file_size(dir.file("GROUPS")) >= 4096);
  }
}

TEST_CASE("commits after close are refused as UNAVAILABLE") {
  TempDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  offsets->close();
  Status s = commit_and_wait(*offsets, "g", 0, 1);
  CHECK(s.code() == Code::kUnavailable);
}

}  // namespace
}  // namespace streamd
