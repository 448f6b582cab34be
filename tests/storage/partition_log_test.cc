// Tests of server/storage/partition_log.cc: offsets, reads, group commit, bounds, time lookups, trim,
// peek, clean close. Recovery and fault injection live in partition_recovery_test.cc.
#include "server/storage/partition_log.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/record_reader.h"
#include "server/storage/segment.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::make_batch;
using testing::payload_for;
using testing::read_all;

PartitionOptions small_segments() { return testing::small_partition_options(2048); }

struct PartitionLogFixture {
  testing::TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<PartitionLog> log;

  explicit PartitionLogFixture(PartitionOptions options = small_segments()) { reopen(options); }
  void reopen(PartitionOptions options = small_segments()) {
    log.reset();
    auto opened = PartitionLog::open(posix_file_system(), dir.file("p0"), options, pool, clock);
    REQUIRE(opened.ok());
    log = std::move(*opened);
  }
  // Appends batches of `sizes[i]` records, checking each lands right after the previous one.
  void append_batches(const std::vector<uint32_t>& sizes) {
    for (uint32_t n : sizes) {
      uint64_t first = log->bounds().next.value;
      auto r = append_and_wait(*log, make_batch(first, n));
      REQUIRE(r.ok());
      REQUIRE(r->first == Offset(first));
      REQUIRE(r->last == Offset(first + n - 1));
    }
  }
};

// Found by fuzz/segment_recovery: a segment named by a base offset near 2^64 (only damage or a foreign
// file makes one) took an append whose range wrapped, and the records read back were not the ones
// appended.
TEST_CASE("batches whose offsets would pass 2^64 - 1 are refused, only those, and the partition goes on",
          "[partition_log]") {
  testing::TempDir dir;
  const std::string part = dir.file("p0");
  REQUIRE(posix_file_system().create_dir(part).ok());
  const Offset base(UINT64_MAX - 3);
  REQUIRE(posix_file_system().open(part + "/" + Segment::file_stem(base) + ".log", OpenMode::kCreate).ok());
  ThreadPool pool{2};
  ManualClock clock;
  auto opened = PartitionLog::open(posix_file_system(), part, small_segments(), pool, clock);
  REQUIRE(opened.ok());
  PartitionLog& log = **opened;
  REQUIRE(log.bounds().next == base);

  // Three offsets are left (2^64 - 4 to 2^64 - 2): the offset after a batch's last must exist too.
  CHECK(append_and_wait(log, make_batch(0, 4)).status().code() == Code::kStreamBackendFailed);
  auto two = append_and_wait(log, make_batch(0, 2));
  REQUIRE(two.ok());
  CHECK(two->first == base);
  CHECK(two->last == Offset(UINT64_MAX - 2));
  auto one = append_and_wait(log, make_batch(2, 1));
  REQUIRE(one.ok());
  CHECK(one->first == Offset(UINT64_MAX - 1));
  CHECK(append_and_wait(log, make_batch(3, 1)).status().code() == Code::kStreamBackendFailed);
  CHECK_FALSE(log.failed());
  CHECK(log.bounds().next == Offset(UINT64_MAX));
  const auto records = read_all(log, base);
  REQUIRE(records.size() == 3);
  CHECK(records.front() == std::pair<uint64_t, std::string>(UINT64_MAX - 3, payload_for(0)));
  CHECK(records.back() == std::pair<uint64_t, std::string>(UINT64_MAX - 1, payload_for(2)));
}

TEST_CASE("offsets are consecutive from zero across segment rolls", "[partition_log]") {
  PartitionLogFixture f;
  std::vector<uint32_t> sizes;
  for (int i = 0; i < 150; ++i) sizes.push_back(1 + i % 5);
  f.append_batches(sizes);
  uint64_t total = 0;
  for (auto n : sizes) total += n;
  CHECK(f.log->bounds() == Bounds{Offset(0), Offset(total)});
  auto segs = f.log->segments();
  REQUIRE(segs.size() > 3);
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    CHECK(segs[i].end == segs[i + 1].base);
    CHECK(segs[i].bytes <= 2048);
    CHECK_FALSE(segs[i].active);
  }
  CHECK(segs.back().active);
}

TEST_CASE("reads_tail is true exactly from the active segment's base on", "[partition_log]") {
  PartitionLogFixture f;
  CHECK(f.log->reads_tail(Offset(0)));  // one empty, active segment
  std::vector<uint32_t> sizes(60, 3);
  f.append_batches(sizes);
  auto segs = f.log->segments();
  REQUIRE(segs.size() > 2);
  const Offset active = segs.back().base;
  CHECK_FALSE(f.log->reads_tail(Offset(0)));
  CHECK_FALSE(f.log->reads_tail(active - 1));
  CHECK(f.log->reads_tail(active));
  CHECK(f.log->reads_tail(f.log->bounds().next));
}

TEST_CASE("reading from every offset returns exactly the records from there on", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({3, 1, 7, 2, 9, 4, 1, 1, 5, 8, 3, 6, 2, 10, 4});
  const uint64_t next = f.log->bounds().next.value;
  for (uint64_t from = 0; from <= next; ++from) {
    auto all = read_all(*f.log, Offset(from), 1 + from % 4);
    REQUIRE(all.size() == next - from);
    for (size_t i = 0; i < all.size(); ++i) {
      REQUIRE(all[i].first == from + i);
      REQUIRE(all[i].second == payload_for(from + i));
    }
  }
}

TEST_CASE("read limits: max_records, max_bytes, and at least one record", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({10});
  auto r = f.log->read(Offset(2), 3, 1 << 20);
  REQUIRE(r.ok());
  REQUIRE(r->entries.size() == 3);
  CHECK(r->entries[0].offset == Offset(2));
  CHECK(r->next_from == Offset(5));
  // Each payload is 9 bytes: a 20-byte budget takes two.
  r = f.log->read(Offset(0), 100, 20);
  REQUIRE(r.ok());
  CHECK(r->entries.size() == 2);
  // A budget smaller than one record still returns one.
  r = f.log->read(Offset(0), 100, 1);
  REQUIRE(r.ok());
  CHECK(r->entries.size() == 1);
}

TEST_CASE("a read in whole batches covers exactly the records a read by record does", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({3, 1, 7, 2, 9, 4, 1, 5});
  const uint64_t next = f.log->bounds().next.value;
  // Five records a read take some batches in part, record by record; a thousand take each whole.
  for (uint32_t per_read : {5u, 1000u}) {
    for (uint64_t from = 0; from <= next; ++from) {
      std::vector<uint64_t> offsets;
      size_t whole = 0;
      Offset at(from);
      while (at.value < next) {
        auto r = f.log->read(at, per_read, 1 << 20, ReadShape::kBatches);
        REQUIRE(r.ok());
        REQUIRE_FALSE(r->entries.empty());
        for (const EntryView& e : r->entries) {
          if (e.whole_batch == 0) {
            offsets.push_back(e.offset.value);
            REQUIRE(e.payload == payload_for(e.offset.value));
            continue;
          }
          ++whole;
          const BatchHeader h = peek_header(e.batch);
          REQUIRE(e.offset == h.base_offset);
          REQUIRE(e.offset >= at);
          REQUIRE(e.whole_batch == h.record_count);
          RecordReader records(e.batch);
          RecordView record;
          while (records.next(record)) {
            offsets.push_back(record.offset.value);
            REQUIRE(record.payload == payload_for(record.offset.value));
          }
          REQUIRE_FALSE(records.error());
        }
        REQUIRE(r->next_from == entry_end(r->entries.back()));
        at = r->next_from;
      }
      REQUIRE(offsets.size() == next - from);
      for (size_t i = 0; i < offsets.size(); ++i) REQUIRE(offsets[i] == from + i);
      if (from == 0 && per_read == 1000) CHECK(whole == 8);
    }
  }
}

TEST_CASE("a read in whole batches counts their record regions against max_bytes, the first always taken",
          "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({10, 10, 10});
  auto r = f.log->read(Offset(0), 100, 1, ReadShape::kBatches);
  REQUIRE(r.ok());
  REQUIRE(r->entries.size() == 1);
  CHECK(r->entries[0].whole_batch == 10);
  CHECK(r->next_from == Offset(10));
  auto region = [&](Offset base) {
    auto whole = f.log->read(base, 100, 1, ReadShape::kBatches);
    REQUIRE(whole.ok());
    const std::string_view batch = whole->entries.at(0).batch;
    return batch.size() - peek_header(batch).header_size();
  };
  const uint64_t two = region(Offset(0)) + region(Offset(10));
  r = f.log->read(Offset(0), 100, two, ReadShape::kBatches);
  REQUIRE(r.ok());
  CHECK(r->entries.size() == 2);
  CHECK(r->next_from == Offset(20));
  r = f.log->read(Offset(0), 100, two - 1, ReadShape::kBatches);
  REQUIRE(r.ok());
  CHECK(r->entries.size() == 1);
  CHECK(r->next_from == Offset(10));
}

TEST_CASE("large reads across segments of large batches return every record in order", "[partition_log]") {
  PartitionOptions options;
  options.segment_bytes = 350 << 10;  // three batches of about 103 KB per segment
  PartitionLogFixture f(options);
  for (int b = 0; b < 10; ++b) {
    BatchBuilder builder;
    for (int i = 0; i < 1000; ++i) builder.add("", std::string(100, 'x'));
    auto appended = append_and_wait(*f.log, std::move(builder).finish());
    REQUIRE(appended.ok());
  }
  REQUIRE(f.log->segments().size() >= 3);
  for (uint32_t per_read : {1000u, 10485u, 50000u}) {
    Offset from(0);
    uint64_t seen = 0;
    while (from < f.log->bounds().next) {
      auto r = f.log->read(from, per_read, 1 << 20);
      REQUIRE(r.ok());
      REQUIRE_FALSE(r->entries.empty());
      for (const auto& e : r->entries) REQUIRE(e.offset == Offset(seen++));
      from = r->next_from;
      REQUIRE(from == Offset(seen));
    }
    CHECK(seen == 10000);
  }
}

TEST_CASE("read errors carry both offsets", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({5});
  auto ahead = f.log->read(Offset(6), 10, 1 << 20);
  REQUIRE_FALSE(ahead.ok());
  CHECK(ahead.status().code() == Code::kOffsetAhead);
  CHECK(ahead.status().field("requested") == "6");
  CHECK(ahead.status().field("next") == "5");
  auto at_end = f.log->read(Offset(5), 10, 1 << 20);
  REQUIRE(at_end.ok());
  CHECK(at_end->entries.empty());
  CHECK(at_end->next_from == Offset(5));
  REQUIRE(f.log->trim(Offset(3)).ok());
  auto trimmed = f.log->read(Offset(2), 10, 1 << 20);
  REQUIRE_FALSE(trimmed.ok());
  CHECK(trimmed.status().code() == Code::kOffsetTrimmed);
  CHECK(trimmed.status().field("requested") == "2");
  CHECK(trimmed.status().field("first") == "3");
}

TEST_CASE("group commit: batches queued during a flush share one write and one sync", "[partition_log]") {
  testing::TempDir dir;
  testing::FaultInjectionFileSystem fs;
  testing::ManualExecutor executor;
  ManualClock clock;
  PartitionOptions options;
  options.preallocate_bytes = 1 << 20;  // one zero-filling write ahead of the records
  auto opened = PartitionLog::open(fs, dir.file("p0"), options, executor, clock);
  REQUIRE(opened.ok());
  auto& log = **opened;
  fs.reset_counters();
  std::vector<Result<AppendRange>> results;
  for (int i = 0; i < 10; ++i) {
    log.append(make_batch(i, 1), [&](Result<AppendRange> r) { results.push_back(std::move(r)); });
  }
  // Nothing is acknowledged or visible before the sync.
  CHECK(results.empty());
  CHECK(log.bounds().next == Offset(0));
  CHECK(log.read(Offset(0), 10, 1 << 20)->entries.empty());
  executor.run_all();
  REQUIRE(results.size() == 10);
  for (int i = 0; i < 10; ++i) {
    REQUIRE(results[i].ok());
    CHECK(results[i]->first == Offset(i));
  }
  CHECK(fs.syncs(".log") == 1);
  CHECK(fs.writes(".log") <= 2);  // the records, and the zero-filled window ahead of them
  CHECK(log.bounds().next == Offset(10));
}

TEST_CASE("a partition that always has appends waiting takes turns with the others", "[partition_log]") {
  testing::TempDir dir;
  testing::ManualExecutor executor;
  ManualClock clock;
  auto a = PartitionLog::open(posix_file_system(), dir.file("a"), PartitionOptions{}, executor, clock);
  auto b = PartitionLog::open(posix_file_system(), dir.file("b"), PartitionOptions{}, executor, clock);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<std::string> acknowledged;
  // Each acknowledgement of partition a brings its next append, as closed-loop producers do.
  std::function<void(int)> append_a = [&](int i) {
    (*a)->append(make_batch(i, 1), [&, i](Result<AppendRange> r) {
      CHECK(r.ok());
      acknowledged.push_back("a" + std::to_string(i));
      if (i < 3) append_a(i + 1);
    });
  };
  append_a(0);
  (*b)->append(make_batch(0, 1), [&](Result<AppendRange> r) {
    CHECK(r.ok());
    acknowledged.push_back("b0");
  });
  REQUIRE(executor.run_one());
  CHECK(acknowledged == std::vector<std::string>{"a0"});
  REQUIRE(executor.run_one());
  CHECK(acknowledged == std::vector<std::string>{"a0", "b0"});
  executor.run_all();
  CHECK(acknowledged == std::vector<std::string>{"a0", "b0", "a1", "a2", "a3"});
}

TEST_CASE("concurrent appenders all land, in one order, with no offset twice", "[partition_log]") {
  PartitionLogFixture f(PartitionOptions{});
  constexpr int kThreads = 8, kPerThread = 50;
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> firsts(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto r = append_and_wait(*f.log, make_batch(0, 2, "t" + std::to_string(t)));
        if (r.ok()) firsts[t].push_back(r->first.value);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  for (auto& v : firsts) {
    REQUIRE(v.size() == kPerThread);
    REQUIRE(std::is_sorted(v.begin(), v.end()));
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i] == 2 * i);
  CHECK(f.log->bounds().next == Offset(2 * kThreads * kPerThread));
}

TEST_CASE("offset_at finds the first offset appended at or after an instant", "[partition_log]") {
  PartitionLogFixture f;
  std::vector<Timestamp> times;
  for (int i = 0; i < 40; ++i) {
    times.push_back(f.clock.now());
    f.append_batches({3});
    f.clock.advance(std::chrono::seconds(1));
  }
  // Batch i holds offsets 3i..3i+2, appended at times[i].
  CHECK(*f.log->offset_at(Timestamp(times[0].micros - 1)) == Offset(0));
  for (int i = 0; i < 40; ++i) {
    CHECK(*f.log->offset_at(times[i]) == Offset(3 * i));
    CHECK(*f.log->offset_at(Timestamp(times[i].micros + 1)) == Offset(3 * i + 3));
  }
  CHECK(*f.log->offset_at(f.clock.now()) == Offset(120));
  REQUIRE(f.log->trim(Offset(30)).ok());
  CHECK(*f.log->offset_at(times[0]) == Offset(30));
}

TEST_CASE("appended_at never goes backwards when the clock does", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({1});
  Timestamp first = f.log->read(Offset(0), 1, 100)->entries[0].appended_at;
  f.clock.advance(std::chrono::seconds(-10));
  f.append_batches({1});
  CHECK(f.log->read(Offset(1), 1, 100)->entries[0].appended_at == first);
}

TEST_CASE("trim raises first at once, drops whole segments, survives reopen", "[partition_log]") {
  PartitionLogFixture f;
  std::vector<uint32_t> sizes(80, 2);
  f.append_batches(sizes);
  const size_t before_segments = f.log->segments().size();
  REQUIRE(f.log->trim(Offset(101)).ok());
  CHECK(f.log->bounds() == Bounds{Offset(101), Offset(160)});
  CHECK(f.log->segments().size() < before_segments);
  CHECK(f.log->segments().front().base <= Offset(101));
  CHECK(read_all(*f.log, Offset(101)).front().first == 101);
  // At or below first changes nothing; past next is refused.
  REQUIRE(f.log->trim(Offset(50)).ok());
  CHECK(f.log->bounds().first == Offset(101));
  auto ahead = f.log->trim(Offset(161));
  CHECK(ahead.code() == Code::kOffsetAhead);
  CHECK(ahead.field("next") == "160");
  f.reopen();
  CHECK(f.log->bounds() == Bounds{Offset(101), Offset(160)});
  // Trimming everything leaves an empty partition whose next offset keeps counting.
  REQUIRE(f.log->trim(Offset(160)).ok());
  f.reopen();
  CHECK(f.log->bounds() == Bounds{Offset(160), Offset(160)});
  f.append_batches({1});
  CHECK(f.log->bounds() == Bounds{Offset(160), Offset(161)});
}

TEST_CASE("peek returns the last retained record", "[partition_log]") {
  PartitionLogFixture f;
  auto empty = f.log->peek();
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->has_value());
  f.append_batches({4, 30, 2});
  auto last = f.log->peek();
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->entries.back().offset == Offset(35));
  CHECK((*last)->entries.back().payload == payload_for(35));
  REQUIRE(f.log->trim(Offset(36)).ok());
  CHECK_FALSE(f.log->peek()->has_value());
}

TEST_CASE("a clean close leaves exact files that reopen without recovery", "[partition_log]") {
  PartitionLogFixture f;
  f.append_batches({5, 5, 5});
  f.log->close();
  CHECK(std::filesystem::exists(f.dir.file("p0/clean")));
  // The active segment was cut to its records: no zero-filled tail remains.
  CHECK(std::filesystem::file_size(f.dir.file("p0/00000000000000000000.log")) == f.log->size_bytes());
  f.reopen();
  CHECK(f.log->bounds() == Bounds{Offset(0), Offset(15)});
  f.append_batches({2});
  CHECK_FALSE(std::filesystem::exists(f.dir.file("p0/clean")));  // the first append removed it
  CHECK(read_all(*f.log, Offset(0)).size() == 17);
}

TEST_CASE("appends after close are refused with UNAVAILABLE", "[partition_log]") {
  PartitionLogFixture f;
  f.log->close();
  auto r = append_and_wait(*f.log, make_batch(0, 1));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
}

TEST_CASE("the commit listener hears every synced end", "[partition_log]") {
  // Declared before the log, so they outlive the listener that refers to them.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> heard;
  PartitionLogFixture f;
  f.log->set_commit_listener([&](Offset next) {
    std::lock_guard lock(mu);
    heard.push_back(next.value);
    cv.notify_all();
  });
  f.append_batches({2, 3});
  // The listener runs after the appends' callbacks: wait for it rather than race it.
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return heard.size() == 2; });
  CHECK(heard == std::vector<uint64_t>{2, 5});
}

// Found by bench/soak: under appends that never paused, each flush re-posted the next group and kept
// the writer's role, so a retention or compaction pass waiting in roll_active_if waited for ever (and
// held a thread while it did).
TEST_CASE("roll_active_if takes the writer's role between two groups of appends", "[partition_log]") {
  testing::TempDir dir;
  testing::ManualExecutor executor;
  ManualClock clock;
  auto opened = PartitionLog::open(posix_file_system(), dir.file("p0"), PartitionOptions{}, executor, clock);
  REQUIRE(opened.ok());
  PartitionLog& log = **opened;
  std::vector<Result<AppendRange>> results;
  auto done = [&](Result<AppendRange> r) { results.push_back(std::move(r)); };
  log.append(make_batch(0, 2), done);  // its flush is queued: the roll must wait for it

  std::promise<Status> rolled;
  std::thread roller([&] { rolled.set_value(log.roll_active_if([](const SegmentInfo&) { return true; })); });
  std::future<Status> roll = rolled.get_future();
  CHECK(roll.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  // Appends keep arriving while the roll waits; they queue behind it instead of keeping it out.
  for (int group = 0; group < 10 && log.segments().size() == 1 && executor.pending() > 0; ++group) {
    log.append(make_batch(0, 1), done);
    executor.run_one();
    if (roll.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready) break;
  }
  REQUIRE(roll.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  roller.join();
  CHECK(roll.get().ok());
  CHECK(log.segments().size() == 2);
  executor.run_all();  // the roll handed the appends queued behind it to a flush
  for (const auto& r : results) CHECK(r.ok());
  CHECK(log.bounds().next == Offset(2 + results.size() - 1));
  CHECK(read_all(log, Offset(0)).size() == log.bounds().next.value);
}

TEST_CASE("roll_active_if closes a non-empty active segment when asked", "[partition_log]") {
  PartitionLogFixture f(PartitionOptions{});
  REQUIRE(f.log->roll_active_if([](const SegmentInfo&) { return true; }).ok());
  CHECK(f.log->segments().size() == 1);  // nothing to roll in an empty segment
  Timestamp first_at = f.clock.now();
  f.append_batches({3});
  f.clock.advance(std::chrono::seconds(5));
  f.append_batches({2});
  SegmentInfo seen;
  REQUIRE(f.log->roll_active_if([&](const SegmentInfo& info) {
    seen = info;
    return false;
  }).ok());
  CHECK(seen.active);
  CHECK(seen.min_appended_at == first_at);
  CHECK(seen.max_appended_at == f.clock.now());
  CHECK(f.log->segments().size() == 1);
  REQUIRE(f.log->roll_active_if([](const SegmentInfo&) { return true; }).ok());
  auto segs = f.log->segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].end == Offset(5));
  CHECK(segs[1].base == Offset(5));
  f.append_batches({1});
  CHECK(read_all(*f.log, Offset(0)).size() == 6);
  f.reopen(PartitionOptions{});
  CHECK(f.log->bounds() == Bounds{Offset(0), Offset(6)});
}

}  // namespace
}  // namespace streamd
