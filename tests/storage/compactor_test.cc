#include "server/storage/compactor.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <thread>

#include "server/storage/batch_builder.h"
#include "server/storage/partition_log.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::TempDir;

constexpr milliseconds kWindow = seconds(10);
constexpr uint64_t kSegmentBytes = 512;

struct Rec {
  std::string key;
  std::string payload;
};

struct Entry {
  uint64_t offset;
  std::string key;
  std::string payload;
  bool operator==(const Entry&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Entry& e) {
  return os << "{" << e.offset << " " << e.key << "=" << e.payload << "}";
}

// A partition on disk, a clock the test moves, and helpers to append and read.
class CompactorFixture {
 public:
  CompactorFixture() { open(); }

  void open() {
    PartitionOptions options;
    options.segment_bytes = kSegmentBytes;
    options.preallocate_bytes = kSegmentBytes;
    auto opened = PartitionLog::open(posix_file_system(), dir.path(), options, pool, clock);
    REQUIRE(opened.ok());
    log = std::move(opened).value();
  }
  void reopen() {
    log->close();
    log.reset();
    open();
  }

  AppendRange append(const std::vector<Rec>& records) {
    BatchBuilder b;
    for (const Rec& r : records) b.add(r.key, r.payload);
    auto range = append_and_wait(*log, std::move(b).finish());
    REQUIRE(range.ok());
    return *range;
  }
  // A young batch large enough to roll the segment, so every earlier batch sits in a closed segment.
  void append_filler() { append({{"filler", std::string(kSegmentBytes, 'f')}}); }

  std::vector<Entry> read_all(uint64_t from = 0) const {
    auto r = log->read(Offset(from), 100000, UINT64_MAX);
    REQUIRE(r.ok());
    std::vector<Entry> out;
    for (const auto& e : r->entries) {
      if (e.key != "filler") out.push_back({e.offset.value, std::string(e.key), std::string(e.payload)});
    }
    return out;
  }

  CompactionStats compact(milliseconds window = kWindow) {
    auto stats = compact_partition(*log, window, clock.now());
    INFO(stats.status().to_string());
    REQUIRE(stats.ok());
    CHECK(stats->kept + stats->dropped == stats->scanned);
    return *stats;
  }

  TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<PartitionLog> log;
};

CompactionStats stats(int64_t scanned, int64_t kept, int64_t dropped, int64_t rewritten) {
  return {scanned, kept, dropped, rewritten};
}

TEST_CASE("a zero compact_after compacts nothing and returns zeros") {
  CompactorFixture f;
  f.append({{"a", "1"}});
  f.append({{"a", "2"}});
  f.clock.advance(std::chrono::hours(24));
  f.append_filler();
  CHECK(f.compact(milliseconds(0)) == CompactionStats{});
  CHECK(f.read_all() == std::vector<Entry>{{0, "a", "1"}, {1, "a", "2"}});
}

TEST_CASE("of each key the last record at least compact_after old survives, offsets and bounds stay") {
  CompactorFixture f;
  f.append({{"a", "1"}});
  f.append({{"b", "1"}});
  f.append({{"a", "2"}});
  f.append({{"", "unkeyed"}});
  f.append({{"a", "3"}});
  f.clock.advance(seconds(20));
  f.append_filler();
  const Bounds before = f.log->bounds();

  // Two superseded a's go; b, the unkeyed record and the last a stay, at their offsets.
  CHECK(f.compact() == stats(5, 3, 2, 1));
  CHECK(f.log->bounds() == before);
  CHECK(f.read_all() == std::vector<Entry>{{1, "b", "1"}, {3, "", "unkeyed"}, {4, "a", "3"}});
  // A reader inside a hole reads on from the next survivor, never OFFSET_TRIMMED.
  CHECK(f.read_all(0) == f.read_all(1));
  CHECK(f.read_all(2) == std::vector<Entry>{{3, "", "unkeyed"}, {4, "a", "3"}});

  // Nothing left to drop: a second compaction scans the survivors and keeps them.
  CHECK(f.compact() == stats(3, 3, 0, 0));
  f.reopen();
  CHECK(f.read_all() == std::vector<Entry>{{1, "b", "1"}, {3, "", "unkeyed"}, {4, "a", "3"}});
  CHECK(f.log->bounds() == before);
}

TEST_CASE("records younger than compact_after are neither scanned nor superseding") {
  CompactorFixture f;
  f.append({{"a", "old"}});
  f.clock.advance(seconds(15));
  f.append({{"a", "young"}});  // newer, but only 5 s old when compacting
  f.clock.advance(seconds(5));
  f.append_filler();
  CHECK(f.compact() == stats(1, 1, 0, 0));
  CHECK(f.read_all() == std::vector<Entry>{{0, "a", "old"}, {1, "a", "young"}});
}

TEST_CASE("a tombstone survives one more compact_after, then goes with its key") {
  CompactorFixture f;
  f.append({{"a", "1"}});
  f.append({{"a", ""}});  // tombstone
  f.append({{"b", "1"}});
  f.clock.advance(seconds(15));
  f.append_filler();

  // First window: the tombstone is old enough to supersede, too young to go.
  CHECK(f.compact() == stats(3, 2, 1, 1));
  CHECK(f.read_all() == std::vector<Entry>{{1, "a", ""}, {2, "b", "1"}});

  // Second window: at least twice compact_after old, it is dropped.
  f.clock.advance(seconds(10));
  CHECK(f.compact() == stats(2, 1, 1, 1));
  CHECK(f.read_all() == std::vector<Entry>{{2, "b", "1"}});
  CHECK(f.log->bounds().first == Offset(0));
}

TEST_CASE("unkeyed records are never dropped") {
  CompactorFixture f;
  for (int i = 0; i < 4; ++i) f.append({{"", "u" + std::to_string(i)}, {"", ""}});
  f.clock.advance(seconds(60));
  f.append_filler();
  CHECK(f.compact() == stats(8, 8, 0, 0));
  CHECK(f.read_all().size() == 8);
}

TEST_CASE("records dropped from inside a batch keep the survivors' offsets and the batch's range") {
  CompactorFixture f;
  f.append({{"a", "1"}, {"b", "1"}, {"a", "2"}, {"c", "1"}});
  f.append({{"b", "2"}, {"", "u"}});
  f.clock.advance(seconds(11));
  f.append_filler();
  CHECK(f.compact().dropped == 2);
  CHECK(f.read_all() == std::vector<Entry>{{2, "a", "2"}, {3, "c", "1"}, {4, "b", "2"}, {5, "", "u"}});
  CHECK(f.log->bounds().next == Offset(7));
  CHECK(f.append({{"d", "1"}}).first == Offset(7));
}

TEST_CASE("records below a trimmed first offset are neither counted nor touched") {
  CompactorFixture f;
  f.append({{"a", "1"}, {"a", "2"}});  // one segment, trimmed into its middle
  f.append({{"a", "3"}});
  f.clock.advance(seconds(20));
  f.append_filler();
  REQUIRE(f.log->trim(Offset(1)).ok());
  CHECK(f.compact() == stats(2, 1, 1, 1));
  CHECK(f.read_all(1) == std::vector<Entry>{{2, "a", "3"}});
}

// The compaction rules stated once more, independently, over a list of appended records.
struct ModelRecord {
  uint64_t offset;
  Rec rec;
  Timestamp at;
};

TEST_CASE("compaction agrees with a model of the rules on random partitions, and survives reopen") {
  auto seed = GENERATE(1u, 2u, 3u, 4u, 5u);
  CompactorFixture f;
  std::mt19937 rng(seed);
  std::vector<ModelRecord> model;
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<Rec> records;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      const unsigned pick = rng() % 10;
      std::string key = pick < 2 ? "" : "k" + std::to_string(rng() % 6);
      std::string payload = (!key.empty() && pick == 2) ? "" : "v" + std::to_string(model.size() + records.size());
      records.push_back({key, payload});
    }
    const AppendRange range = f.append(records);
    for (size_t i = 0; i < records.size(); ++i) model.push_back({range.first.value + i, records[i], f.clock.now()});
    f.clock.advance(milliseconds(rng() % 3000));
  }
  f.clock.advance(seconds(1));
  f.append_filler();

  const Timestamp now = f.clock.now();
  const int64_t w = kWindow.count() * 1000;
  std::map<std::string, uint64_t> last;
  for (const auto& m : model) {
    if (m.at.micros <= now.micros - w && !m.rec.key.empty()) last[m.rec.key] = m.offset;
  }
  std::vector<Entry> expected;
  CompactionStats want;
  for (const auto& m : model) {
    bool keep = true;
    if (m.at.micros <= now.micros - w) {
      ++want.scanned;
      if (!m.rec.key.empty()) {
        keep = last[m.rec.key] == m.offset && !(m.rec.payload.empty() && m.at.micros <= now.micros - 2 * w);
      }
      ++(keep ? want.kept : want.dropped);
    }
    if (keep) expected.push_back({m.offset, m.rec.key, m.rec.payload});
  }

  CompactionStats got = f.compact();
  got.segments_rewritten = 0;
  CHECK(got == want);
  CHECK(f.read_all() == expected);
  f.reopen();
  CHECK(f.read_all() == expected);
  CHECK(f.compact().dropped == 0);
}

TEST_CASE("reads running during a compaction see the records before or after it, never a mix") {
  CompactorFixture f;
  for (int i = 0; i < 300; ++i) f.append({{"k" + std::to_string(i % 7), std::to_string(i)}});
  f.clock.advance(seconds(30));
  f.append_filler();
  const auto original = f.read_all();

  std::atomic<bool> compacted{false};
  std::string problem;  // Catch2 assertions are for the test's own thread only
  std::thread reader([&] {
    // Every pass must be a subsequence of the original ending where the original ends. At least two
    // passes after the compaction returned; the ones before overlap it.
    int after = 0;
    for (int pass = 0; pass < 100000 && after < 2 && problem.empty(); ++pass) {
      const bool done = compacted.load();
      auto r = f.log->read(Offset(0), 100000, UINT64_MAX);
      if (!r.ok()) {
        problem = r.status().to_string();
        break;
      }
      size_t j = 0;
      Offset last_seen;
      for (const auto& e : r->entries) {
        if (e.key == "filler") continue;
        while (j < original.size() && original[j].offset != e.offset.value) ++j;
        if (j == original.size() || original[j] != Entry{e.offset.value, std::string(e.key), std::string(e.payload)}) {
          problem = "pass " + std::to_string(pass) + ": unexpected entry at offset " + e.offset.str();
        }
        last_seen = e.offset;
      }
      if (last_seen.value != original.back().offset) problem = "pass " + std::to_string(pass) + ": short read";
      if (done) ++after;
    }
  });
  CHECK(f.compact().dropped == 300 - 7);
  compacted = true;
  reader.join();
  INFO(problem);
  CHECK(problem.empty());
  CHECK(f.read_all().size() == 7);
}

TEST_CASE("a swap file left by a crash before the swap is removed and the old segment kept") {
  CompactorFixture f;
  f.append({{"a", "1"}});
  f.append({{"a", "2"}});
  f.clock.advance(seconds(20));
  f.append_filler();
  {
    auto file = posix_file_system().open(f.log->swap_path(Offset(0)), OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->write_at(FilePosition(0), "half a rewrite").ok());
  }
  f.reopen();
  CHECK_FALSE(posix_file_system().exists(f.log->swap_path(Offset(0))));
  CHECK(f.read_all() == std::vector<Entry>{{0, "a", "1"}, {1, "a", "2"}});
  CHECK(f.compact() == stats(2, 1, 1, 1));
}

}  // namespace
}  // namespace streamd
