// Tests of server/storage/durable_write.cc and of every caller's use of it under injected faults: a
// failed write or sync of the replacement, then a power cut, leaves the old content; a finished
// replacement survives the power cut; a failed zero-fill acknowledges nothing.
#include "server/storage/durable_write.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <future>
#include <string>

#include "server/storage/clock.h"
#include "server/storage/group_offsets.h"
#include "server/storage/partition_log.h"
#include "server/storage/stream_meta.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::FaultInjectionFileSystem;
using testing::TempDir;

std::string contents(FileSystem& fs, const std::string& path) {
  auto file = fs.open(path, OpenMode::kReadOnly);
  REQUIRE(file.ok());
  auto size = (*file)->size();
  REQUIRE(size.ok());
  std::string bytes(*size, '\0');
  auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
  REQUIRE(n.ok());
  bytes.resize(*n);
  return bytes;
}

enum class Fault { kWrite, kSync };

void arm(FaultInjectionFileSystem& fs, Fault fault, const std::string& filter) {
  if (fault == Fault::kWrite) {
    fs.fail_next_write(EIO, filter);
  } else {
    fs.fail_next_sync(EIO, filter);
  }
}

TEST_CASE("replace_file: the new content survives a power cut, and the temp file is gone") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("f");
  REQUIRE(replace_file(fs, dir.path(), path + ".tmp", path, "old").ok());
  bool renamed = false;
  REQUIRE(replace_file(fs, dir.path(), path + ".tmp", path, "new", [&] { renamed = true; }).ok());
  CHECK(renamed);
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(fs, path) == "new");
  CHECK_FALSE(fs.exists(path + ".tmp"));
}

TEST_CASE("replace_file: a failed write or sync of the temp file leaves the old content through a power cut") {
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync);
  TempDir dir;
  FaultInjectionFileSystem fs;
  const std::string path = dir.file("f");
  REQUIRE(replace_file(fs, dir.path(), path + ".tmp", path, "old").ok());
  arm(fs, fault, ".tmp");
  bool renamed = false;
  Status s = replace_file(fs, dir.path(), path + ".tmp", path, "new", [&] { renamed = true; });
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("errno") == std::to_string(EIO));
  CHECK_FALSE(renamed);
  CHECK(contents(fs, path) == "old");
  CHECK_FALSE(fs.exists(path + ".tmp"));  // no half-written file is left behind
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(contents(fs, path) == "old");
}

TEST_CASE("trim's first offset: a failed replacement keeps the old first offset through a power cut") {
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync);
  TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool(1);
  ManualClock clock;
  auto open = [&] {
    auto r = PartitionLog::open(fs, dir.file("p0"), testing::small_partition_options(1 << 20), pool, clock);
    REQUIRE(r.ok());
    return std::move(r).value();
  };
  auto log = open();
  REQUIRE(append_and_wait(*log, testing::make_batch(0, 10)).ok());
  REQUIRE(log->trim(Offset(3)).ok());
  arm(fs, fault, "first_offset");
  CHECK(log->trim(Offset(6)).code() == Code::kStreamBackendFailed);
  CHECK(log->bounds().first == Offset(3));  // a failed trim does not raise first
  log->close(PartitionLog::CloseMode::kAsIs);
  log.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  log = open();
  CHECK(log->bounds().first == Offset(3));
  REQUIRE(log->trim(Offset(6)).ok());
  log.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(open()->bounds().first == Offset(6));
}

TEST_CASE("stream metadata: a failed replacement keeps the old policy through a power cut") {
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync);
  TempDir dir;
  FaultInjectionFileSystem fs;
  StreamMeta meta;
  meta.policy.partitions = 3;
  REQUIRE(write_stream_meta(fs, dir.path(), meta).ok());
  StreamMeta changed = meta;
  changed.policy.retain_bytes = 42;
  arm(fs, fault, "STREAM.tmp");
  CHECK_FALSE(write_stream_meta(fs, dir.path(), changed).ok());
  REQUIRE(fs.drop_unsynced_data().ok());
  auto read = read_stream_meta(fs, dir.path());
  REQUIRE(read.ok());
  CHECK(*read == meta);
  REQUIRE(write_stream_meta(fs, dir.path(), changed).ok());
  REQUIRE(fs.drop_unsynced_data().ok());
  CHECK(*read_stream_meta(fs, dir.path()) == changed);
}

Status commit_and_wait(GroupOffsets& offsets, const std::string& group, uint64_t next) {
  std::promise<Status> done;
  offsets.commit(group, PartitionId(0), Offset(next), [&](Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_CASE("group offsets rewrite: a failed replacement keeps every commit through a power cut") {
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync);
  TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool(1);
  GroupOffsetsOptions options;
  options.rewrite_min_bytes = 64;
  auto opened = GroupOffsets::open(fs, dir.path(), pool, options);
  REQUIRE(opened.ok());
  auto offsets = std::move(opened).value();
  for (uint64_t i = 1; i <= 3; ++i) REQUIRE(commit_and_wait(*offsets, "g", i).ok());
  arm(fs, fault, "GROUPS.tmp");  // the commit crossing the threshold rewrites, and that rewrite fails
  for (uint64_t i = 4; i <= 8; ++i) REQUIRE(commit_and_wait(*offsets, "g", i).ok());
  CHECK_FALSE(offsets->failed());  // the long log still holds everything: commits go on
  offsets.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  auto reopened = GroupOffsets::open(fs, dir.path(), pool, options);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->committed("g", PartitionId(0)) == Offset(8));
}

TEST_CASE("ZeroFillAhead writes one window at a time, from the writer on, never past its limit") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto file = fs.open(dir.file("f"), OpenMode::kCreate);
  REQUIRE(file.ok());
  ZeroFillAhead fill(4096, 10000);
  REQUIRE(fill.ensure(**file, 0, 10).ok());
  CHECK(fill.end() == 4096);
  CHECK(fs.writes("f") == 1);
  REQUIRE(fill.ensure(**file, 10, 4096).ok());  // inside the window: nothing to write
  CHECK(fs.writes("f") == 1);
  REQUIRE(fill.ensure(**file, 4096, 4097).ok());
  CHECK(fill.end() == 8192);
  REQUIRE(fill.ensure(**file, 8192, 8200).ok());
  CHECK(fill.end() == 10000);  // the limit caps the window
  REQUIRE(fill.ensure(**file, 10000, 12000).ok());
  CHECK(fill.end() == 12000);  // but never what a write needs
  auto size = (*file)->size();
  REQUIRE(size.ok());
  CHECK(*size == 12000);
}

TEST_CASE("ZeroFillAhead's window grows with what the file holds, from 64 KiB to its maximum") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto file = fs.open(dir.file("f"), OpenMode::kCreate);
  REQUIRE(file.ok());
  constexpr uint64_t kKiB = 1024;
  ZeroFillAhead fill(4096 * kKiB);
  // A file written once costs the first window, not the maximum.
  REQUIRE(fill.ensure(**file, 0, 100).ok());
  CHECK(fill.end() == 64 * kKiB);
  // Each later window is as large as the records before it: the zeros ahead never exceed what was written.
  REQUIRE(fill.ensure(**file, 64 * kKiB, 64 * kKiB + 1).ok());
  CHECK(fill.end() == 128 * kKiB);
  REQUIRE(fill.ensure(**file, 128 * kKiB, 128 * kKiB + 1).ok());
  CHECK(fill.end() == 256 * kKiB);
  REQUIRE(fill.ensure(**file, 3072 * kKiB, 3072 * kKiB + 1).ok());
  CHECK(fill.end() == 6144 * kKiB);
  // Past the maximum the window stays at it.
  REQUIRE(fill.ensure(**file, 6144 * kKiB, 6144 * kKiB + 1).ok());
  CHECK(fill.end() == 10240 * kKiB);
  auto size = (*file)->size();
  REQUIRE(size.ok());
  CHECK(*size == 10240 * kKiB);
}

TEST_CASE("ZeroFillAhead: a failed fill leaves its end where it was, and the next call fills again") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  auto file = fs.open(dir.file("f"), OpenMode::kCreate);
  REQUIRE(file.ok());
  ZeroFillAhead fill(4096);
  fs.fail_next_write(ENOSPC);
  Status s = fill.ensure(**file, 0, 10);
  CHECK(s.field("errno") == std::to_string(ENOSPC));
  CHECK(fill.end() == 0);
  REQUIRE(fill.ensure(**file, 0, 10).ok());
  CHECK(fill.end() == 4096);
}

TEST_CASE("a segment whose zero-fill fails acknowledges nothing, and the power cut loses nothing answered") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool(1);
  ManualClock clock;
  auto options = testing::small_partition_options(1 << 20);
  auto open = [&] {
    auto r = PartitionLog::open(fs, dir.file("p0"), options, pool, clock);
    REQUIRE(r.ok());
    return std::move(r).value();
  };
  auto log = open();
  fs.reset_counters();
  fs.fail_next_write(EIO, ".log");  // a new segment's first write is the window's zero-fill
  auto r = append_and_wait(*log, testing::make_batch(0, 2));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().field("errno") == std::to_string(EIO));
  CHECK(fs.writes(".log") == 0);  // the records were never written after the failed fill
  CHECK(log->failed());
  log.reset();
  REQUIRE(fs.drop_unsynced_data().ok());
  log = open();
  CHECK(log->bounds().next == Offset(0));
  REQUIRE(append_and_wait(*log, testing::make_batch(0, 2)).ok());
}

TEST_CASE("group offsets whose write finds no space fail that commit only, and take the next") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  testing::ManualExecutor executor;
  GroupOffsetsOptions options;
  options.preallocate_bytes = 4096;
  {
    auto opened = GroupOffsets::open(fs, dir.path(), executor, options);
    REQUIRE(opened.ok());
    auto& offsets = **opened;
    std::vector<Status> answers;
    fs.fail_next_write(ENOSPC, "GROUPS");  // the first commit's write is the window's zero-fill
    offsets.commit("g", PartitionId(0), Offset(1), [&](Status s) { answers.push_back(s); });
    executor.run_all();
    REQUIRE(answers.size() == 1);
    CHECK(answers[0].code() == Code::kStreamBackendFailed);
    CHECK(answers[0].field("errno") == std::to_string(ENOSPC));
    CHECK(answers[0].message().find("no space left") != std::string::npos);
    CHECK_FALSE(offsets.failed());
    CHECK_FALSE(offsets.committed("g", PartitionId(0)).has_value());
    // Space is back: the next commit is written and acknowledged.
    offsets.commit("g", PartitionId(0), Offset(2), [&](Status s) { answers.push_back(s); });
    executor.run_all();
    REQUIRE(answers.size() == 2);
    CHECK(answers[1].ok());
    CHECK(offsets.committed("g", PartitionId(0)) == Offset(2));
    offsets.close();
  }
  REQUIRE(fs.drop_unsynced_data().ok());
  auto reopened = GroupOffsets::open(fs, dir.path(), executor, options);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->committed("g", PartitionId(0)) == Offset(2));
}

TEST_CASE("group offsets whose write fails EIO acknowledge nothing and refuse more") {
  TempDir dir;
  FaultInjectionFileSystem fs;
  testing::ManualExecutor executor;
  GroupOffsetsOptions options;
  options.preallocate_bytes = 4096;
  auto opened = GroupOffsets::open(fs, dir.path(), executor, options);
  REQUIRE(opened.ok());
  auto& offsets = **opened;
  std::vector<Status> answers;
  fs.fail_next_write(EIO, "GROUPS");
  offsets.commit("g", PartitionId(0), Offset(1), [&](Status s) { answers.push_back(s); });
  offsets.commit("g", PartitionId(0), Offset(2), [&](Status s) { answers.push_back(s); });
  executor.run_all();
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].field("errno") == std::to_string(EIO));
  CHECK_FALSE(answers[1].ok());
  CHECK(offsets.failed());
  CHECK_FALSE(offsets.committed("g", PartitionId(0)).has_value());
}

}  // namespace
}  // namespace streamd
