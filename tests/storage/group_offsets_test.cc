#include "server/storage/group_offsets.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "tests/storage/scratch_dir.h"

namespace streamd {
namespace {

using testing::ScratchDir;

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
  ScratchDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  CHECK_FALSE(offsets->committed("g", PartitionId(0)).has_value());
  REQUIRE(commit_and_wait(*offsets, "g", 0, 5).ok());
  CHECK_FALSE(offsets->committed("g", PartitionId(1)).has_value());
  CHECK_FALSE(offsets->committed("h", PartitionId(0)).has_value());
}

TEST_CASE("a commit replaces the group's previous offset, moving forward or back") {
  ScratchDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  for (uint64_t next : {10u, 20u, 3u, 0u, 7u}) {
    REQUIRE(commit_and_wait(*offsets, "g", 0, next).ok());
    CHECK(offsets->committed("g", PartitionId(0)) == Offset(next));
  }
}

TEST_CASE("list returns every group and partition, ordered") {
  ScratchDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  REQUIRE(commit_and_wait(*offsets, "b", 1, 4).ok());
  REQUIRE(commit_and_wait(*offsets, "a", 2, 9).ok());
  REQUIRE(commit_and_wait(*offsets, "b", 0, 6).ok());
  REQUIRE(commit_and_wait(*offsets, "a", 2, 8).ok());
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"a", PartitionId(2), Offset(8)}, E{"b", PartitionId(0), Offset(6)},
                                          E{"b", PartitionId(1), Offset(4)}});
}

TEST_CASE("commits survive a reopen") {
  ScratchDir dir;
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

TEST_CASE("concurrent commits from many groups all land and share syncs") {
  ScratchDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  constexpr int kGroups = 16;
  constexpr int kCommits = 50;
  std::vector<std::thread> threads;
  for (int g = 0; g < kGroups; ++g) {
    threads.emplace_back([&, g] {
      for (int i = 1; i <= kCommits; ++i) {
        REQUIRE(commit_and_wait(*offsets, "group-" + std::to_string(g), g % 4, static_cast<uint64_t>(i)).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int g = 0; g < kGroups; ++g) {
    CHECK(offsets->committed("group-" + std::to_string(g), PartitionId(g % 4)) == Offset(kCommits));
  }
}

TEST_CASE("a torn last record is dropped on open and the log stays usable") {
  ScratchDir dir;
  ThreadPool pool(2);
  const std::string path = dir / "GROUPS";
  uint64_t size_before_last = 0;
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "g", 0, 1).ok());
    size_before_last = offsets->log_bytes();
    REQUIRE(commit_and_wait(*offsets, "g", 0, 2).ok());
  }
  const uint64_t full = file_size(path);
  // Cut the log at every byte inside the last record: each time, the first commit is what survives.
  for (uint64_t cut = size_before_last; cut < full; ++cut) {
    ScratchDir copy;
    std::filesystem::copy_file(path, copy / "GROUPS");
    std::filesystem::resize_file(copy / "GROUPS", cut);
    auto offsets = open_offsets(copy.path(), pool);
    INFO("cut at " << cut);
    CHECK(offsets->committed("g", PartitionId(0)) == Offset(1));
    REQUIRE(commit_and_wait(*offsets, "g", 0, 3).ok());
    offsets.reset();
    CHECK(open_offsets(copy.path(), pool)->committed("g", PartitionId(0)) == Offset(3));
  }
}

TEST_CASE("a damaged record followed by others keeps what precedes it") {
  ScratchDir dir;
  ThreadPool pool(2);
  const std::string path = dir / "GROUPS";
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
  ScratchDir dir;
  ThreadPool pool(2);
  std::ofstream(dir / "GROUPS") << "NOTAGROUPSLOG";
  auto r = GroupOffsets::open(posix_file_system(), dir.path(), pool);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kStreamBackendFailed);
  CHECK(r.status().field("path") == dir / "GROUPS");
}

TEST_CASE("a leftover temp file from an interrupted rewrite is ignored and removed") {
  ScratchDir dir;
  ThreadPool pool(2);
  {
    auto offsets = open_offsets(dir.path(), pool);
    REQUIRE(commit_and_wait(*offsets, "g", 0, 4).ok());
  }
  std::ofstream(dir / "GROUPS.tmp") << "half a rewrite";
  auto offsets = open_offsets(dir.path(), pool);
  CHECK(offsets->committed("g", PartitionId(0)) == Offset(4));
  CHECK_FALSE(std::filesystem::exists(dir / "GROUPS.tmp"));
}

TEST_CASE("the log is rewritten compactly once it outgrows its live size, keeping every offset") {
  ScratchDir dir;
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
    CHECK(file_size(dir / "GROUPS") == offsets->log_bytes());
  }
  auto offsets = open_offsets(dir.path(), pool, options);
  using E = GroupOffsets::Entry;
  CHECK(offsets->list() == std::vector<E>{E{"g0", PartitionId(0), Offset(198)}, E{"g0", PartitionId(1), Offset(195)},
                                          E{"g1", PartitionId(0), Offset(196)}, E{"g1", PartitionId(1), Offset(199)},
                                          E{"g2", PartitionId(0), Offset(194)}, E{"g2", PartitionId(1), Offset(197)}});
}

TEST_CASE("commits after close are refused as UNAVAILABLE") {
  ScratchDir dir;
  ThreadPool pool(2);
  auto offsets = open_offsets(dir.path(), pool);
  offsets->close();
  Status s = commit_and_wait(*offsets, "g", 0, 1);
  CHECK(s.code() == Code::kUnavailable);
}

}  // namespace
}  // namespace streamd
