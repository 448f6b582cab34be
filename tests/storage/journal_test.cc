// The shared journal (server/storage/journal.cc) and what PartitionLog and StreamStore do with it:
// small groups of many partitions synced together, replay after losing every unsynced write, forget
// records, checkpoints, and the fallback to a segment's own sync when the journal fails.
#include "server/storage/journal.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <future>

#include "server/storage/clock.h"
#include "server/storage/partition_log.h"
#include "server/storage/segment.h"
#include "server/storage/stream_store.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::FaultInjectionFileSystem;
using testing::make_batch;
using testing::payload_for;
using testing::read_all;
namespace stdfs = std::filesystem;

std::vector<std::string> journal_files(const std::string& dir) {
  std::vector<std::string> names;
  if (!stdfs::exists(dir)) return names;
  for (const auto& e : stdfs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A journal and partition logs of one data directory, opened directly, over a fault-injecting file
// system that can lose what was not synced.
struct Journaled {
  testing::TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool{2};
  ManualClock clock;
  std::string streams = dir.file("streams");
  std::string journal_dir = dir.file("journal");
  std::unique_ptr<Journal> journal;
  JournalOptions journal_options;

  Journaled() { REQUIRE(stdfs::create_directories(streams + "/s")); }

  void open_journal(uint64_t sequence = 1) {
    auto j = Journal::open(fs, journal_dir, streams, sequence, journal_options);
    INFO(j.status().to_string());
    REQUIRE(j.ok());
    journal = std::move(j).value();
  }
  std::unique_ptr<PartitionLog> open_log(int partition, bool with_journal = true) {
    PartitionOptions options = testing::small_partition_options(1 << 20);
    if (with_journal) options.journal = journal.get();
    auto log = PartitionLog::open(fs, streams + "/s/" + std::to_string(partition), options, pool, clock);
    INFO(log.status().to_string());
    REQUIRE(log.ok());
    return std::move(log).value();
  }
  // Opens the journal and `n` partition logs writing through it.
  std::vector<std::unique_ptr<PartitionLog>> start(int n) {
    open_journal();
    std::vector<std::unique_ptr<PartitionLog>> logs;
    for (int p = 0; p < n; ++p) logs.push_back(open_log(p));
    return logs;
  }
  // What the journal directory holds now.
  JournalContents contents() {
    auto read = read_journal(fs, journal_dir);
    INFO(read.status().to_string());
    REQUIRE(read.ok());
    return std::move(read).value();
  }
  // After a cut: partition `p` opened without the journal and given what the journal holds for it.
  std::unique_ptr<PartitionLog> recovered(int p, PartitionOptions options = testing::small_partition_options(1 << 20)) {
    const JournalContents journaled = contents();
    auto log = PartitionLog::open(fs, streams + "/s/" + std::to_string(p), options, pool, clock);
    REQUIRE(log.ok());
    auto it = journaled.batches.find("s/" + std::to_string(p));
    if (it != journaled.batches.end()) REQUIRE((*log)->replay(it->second).ok());
    return std::move(log).value();
  }
  // A power cut: nothing closes cleanly, and every write not synced is gone.
  void cut(std::vector<std::unique_ptr<PartitionLog>>& logs) {
    for (auto& log : logs) log->close(PartitionLog::CloseMode::kAsIs);
    logs.clear();
    journal->close(Journal::CloseMode::kAsIs);
    journal.reset();
    Status dropped = fs.drop_unsynced_data();
    INFO(dropped.to_string());
    REQUIRE(dropped.ok());
  }
};

// Appends batches `from` to `from + batches - 1` of 2 records each (batch b holding payloads 2b and
// 2b + 1) to each log at once, and waits for every answer.
void append_everywhere(std::vector<std::unique_ptr<PartitionLog>>& logs, int batches, int from = 0) {
  std::vector<std::future<Result<AppendRange>>> answers;
  for (int b = from; b < from + batches; ++b) {
    for (auto& log : logs) {
      auto promise = std::make_shared<std::promise<Result<AppendRange>>>();
      answers.push_back(promise->get_future());
      const uint64_t first = static_cast<uint64_t>(b) * 2;
      log->append(make_batch(first, 2), [promise](Result<AppendRange> r) { promise->set_value(std::move(r)); });
    }
  }
  for (auto& a : answers) {
    auto r = a.get();
    INFO(r.status().to_string());
    REQUIRE(r.ok());
  }
}

void check_payloads(const SegmentedLog& log, uint64_t count) {
  auto all = read_all(log, Offset(0));
  REQUIRE(all.size() == count);
  for (uint64_t i = 0; i < count; ++i) CHECK(all[i] == std::make_pair(i, payload_for(i)));
}

TEST_CASE("journal: small groups of many partitions are synced by the journal, not their segments") {
  Journaled j;
  auto logs = j.start(8);
  j.fs.reset_counters();
  append_everywhere(logs, 10);
  CHECK(j.fs.syncs(".log") == 0);
  // 80 groups at most, each partition's one at a time; the journal took them in fewer syncs.
  const uint64_t journal_syncs = j.fs.syncs(".journal");
  CHECK(journal_syncs >= 1);
  CHECK(journal_syncs <= 80);
  for (auto& log : logs) check_payloads(*log, 20);
}

TEST_CASE("journal: acknowledged appends lost from their segments are replayed from the journal") {
  Journaled j;
  auto logs = j.start(3);
  append_everywhere(logs, 5);
  j.cut(logs);

  const auto contents = j.contents();
  REQUIRE(contents.batches.size() == 3);
  CHECK(contents.files == std::vector<std::string>{j.journal_dir + "/" + Journal::file_name(1)});
  CHECK(contents.next_sequence == 2);
  for (int p = 0; p < 3; ++p) {
    auto log = j.open_log(p, /*with_journal=*/false);
    CHECK(log->bounds().next == Offset(0));  // the segment lost every record: none was synced there
    const auto& batches = contents.batches.at("s/" + std::to_string(p));
    CHECK(batches.size() == 5);
    REQUIRE(log->replay(batches).ok());
    CHECK(log->bounds() == Bounds{Offset(0), Offset(10)});
    check_payloads(*log, 10);
    // A second replay, as after a crash during the first, finds every batch present.
    REQUIRE(log->replay(batches).ok());
    CHECK(log->bounds().next == Offset(10));
    log->close(PartitionLog::CloseMode::kAsIs);
  }
  // Replayed and synced: the records survive another cut without the journal.
  REQUIRE(j.fs.drop_unsynced_data().ok());
  for (int p = 0; p < 3; ++p) check_payloads(*j.open_log(p, false), 10);
}

TEST_CASE("journal: a segment that lost its first bytes but kept later ones and its index is rebuilt from "
          "the journal") {
  Journaled j;
  auto logs = j.start(1);
  append_everywhere(logs, 40);
  const std::string segment = j.streams + "/s/0/" + Segment::file_stem(Offset(0)) + ".log";
  for (auto& log : logs) log->close(PartitionLog::CloseMode::kAsIs);
  logs.clear();
  j.journal->close(Journal::CloseMode::kAsIs);
  j.journal.reset();
  // A cut that kept the segment's later sectors and its index entries, but not its first sector.
  std::string bytes = testing::read_file(segment);
  REQUIRE(bytes.size() > 1024);
  std::fill(bytes.begin(), bytes.begin() + 512, '\0');
  testing::write_file(segment, bytes);

  auto log = j.recovered(0);
  CHECK(log->bounds() == Bounds{Offset(0), Offset(80)});
  check_payloads(*log, 80);
}

TEST_CASE("journal: replay keeps the batches' offsets and instants, and appends go on after them") {
  Journaled j;
  auto logs = j.start(1);
  j.clock.advance(std::chrono::seconds(5));
  append_everywhere(logs, 2);
  const Timestamp appended = j.clock.now();
  j.cut(logs);
  const auto contents = j.contents();
  auto log = j.open_log(0, false);
  REQUIRE(log->replay(contents.batches.at("s/0")).ok());
  auto first = log->read(Offset(0), 1, 1 << 20);
  REQUIRE(first.ok());
  REQUIRE(first->entries.size() == 1);
  CHECK(first->entries[0].appended_at == appended);
  CHECK(log->offset_at(appended).value() == Offset(0));
  REQUIRE(append_and_wait(*log, make_batch(4, 1)).ok());
  check_payloads(*log, 5);
}

TEST_CASE("journal: a record past a gap in the log is refused, naming where the log ends") {
  Journaled j;
  auto logs = j.start(1);
  append_everywhere(logs, 3);
  j.cut(logs);
  const auto contents = j.contents();
  std::vector<std::string> batches = contents.batches.at("s/0");
  batches.erase(batches.begin());  // offsets 0 and 1 are in neither the segment nor the journal
  auto log = j.open_log(0, false);
  Status s = log->replay(batches);
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("next") == "0");
  CHECK(s.field("journal_base") == "2");
  CHECK(log->bounds().next == Offset(0));
}

TEST_CASE("journal: a forget record drops the stream's earlier records, not its later ones") {
  Journaled j;
  auto logs = j.start(1);
  append_everywhere(logs, 2);
  REQUIRE(j.journal->forget("s").ok());
  append_everywhere(logs, 1, 2);
  j.cut(logs);
  const auto contents = j.contents();
  REQUIRE(contents.batches.count("s/0") == 1);
  const auto& kept = contents.batches.at("s/0");
  REQUIRE(kept.size() == 1);
  CHECK(peek_header(kept[0]).base_offset == Offset(4));
}

TEST_CASE("journal: a torn or damaged record ends the file, and what precedes it is read") {
  Journaled j;
  auto logs = j.start(1);
  append_everywhere(logs, 1);
  append_everywhere(logs, 1, 1);
  j.cut(logs);
  const std::string path = j.journal_dir + "/" + Journal::file_name(1);
  const auto whole = j.contents();
  REQUIRE(whole.batches.at("s/0").size() == 2);
  // The second record starts where the first one's bytes end.
  const uint64_t second = Journal::kMagic.size() + 8 + 3 + 3 + whole.batches.at("s/0")[0].size();
  SECTION("damaged") { testing::flip_byte(path, second + 20); }
  SECTION("torn") { testing::truncate_file(path, second + 20); }
  const auto contents = j.contents();
  REQUIRE(contents.batches.at("s/0").size() == 1);
  CHECK(contents.batches.at("s/0")[0] == whole.batches.at("s/0")[0]);
}

TEST_CASE("journal: a full file is checkpointed: its segments are synced and the file removed") {
  Journaled j;
  j.journal_options.file_bytes = 1024;
  auto logs = j.start(2);
  // One batch per partition at a time, each answered before the next: every round is a journal write
  // of its own, so the files fill and roll. Sent all at once, they could all go in one write to the
  // first file, which rolls only at the write after it.
  for (int b = 0; b < 20; ++b) append_everywhere(logs, 1, b);
  // The checkpointer runs behind the writer: waited for, not polled (a busy machine may starve it).
  // The writer rolls a full file after answering its group, so the last roll may still be under way:
  // then the file it retires is there beside the newest one. Every file retired before is gone.
  j.journal->wait_for_checkpoints();
  const auto files = journal_files(j.journal_dir);
  REQUIRE(!files.empty());
  CHECK(files.size() <= 2);
  CHECK(files[0] != Journal::file_name(1));
  CHECK(j.fs.syncs(".log") > 0);
  j.cut(logs);
  // What the removed files held is in the segments; what the newest holds is replayed.
  for (int p = 0; p < 2; ++p) check_payloads(*j.recovered(p), 40);
}

TEST_CASE("journal: a clean close syncs the segments and leaves no journal file") {
  Journaled j;
  auto logs = j.start(1);
  append_everywhere(logs, 3);
  logs[0]->close(PartitionLog::CloseMode::kAsIs);
  logs.clear();
  j.journal->close();
  CHECK(journal_files(j.journal_dir).empty());
  REQUIRE(j.fs.drop_unsynced_data().ok());
  check_payloads(*j.open_log(0, false), 6);
}

TEST_CASE("journal: when the journal cannot sync, the partition syncs its own segment and the answer stands") {
  Journaled j;
  auto logs = j.start(1);
  SECTION("the disk has no room for the journal") {
    j.fs.fail_next_write(ENOSPC, ".journal");
    append_everywhere(logs, 1);
    CHECK(j.fs.syncs(".log") == 1);
    // Only that group: the next goes through the journal again.
    append_everywhere(logs, 1, 1);
    CHECK(j.fs.syncs(".log") == 1);
  }
  SECTION("the journal's sync fails") {
    j.fs.fail_next_sync(EIO, ".journal");
    append_everywhere(logs, 1);
    CHECK(j.fs.syncs(".log") == 1);
    // The journal failed for good: every later group syncs its segment.
    append_everywhere(logs, 1, 1);
    CHECK(j.fs.syncs(".log") == 2);
  }
  j.cut(logs);
  check_payloads(*j.recovered(0), 4);
}

TEST_CASE("journal: groups that roll segments survive a cut, the rolled segments synced by the roll") {
  Journaled j;
  j.open_journal();
  std::vector<std::unique_ptr<PartitionLog>> logs;
  PartitionOptions options = testing::small_partition_options(300);
  options.journal = j.journal.get();
  auto log = PartitionLog::open(j.fs, j.streams + "/s/0", options, j.pool, j.clock);
  REQUIRE(log.ok());
  logs.push_back(std::move(log).value());
  append_everywhere(logs, 12);
  REQUIRE(logs[0]->segments().size() > 2);
  j.cut(logs);
  check_payloads(*j.recovered(0, testing::small_partition_options(300)), 24);
}

TEST_CASE("journal: a group larger than journal_group_bytes syncs its segment") {
  Journaled j;
  j.open_journal();
  std::vector<std::unique_ptr<PartitionLog>> logs;
  PartitionOptions options = testing::small_partition_options(1 << 20);
  options.journal = j.journal.get();
  options.journal_group_bytes = 64;
  auto log = PartitionLog::open(j.fs, j.streams + "/s/0", options, j.pool, j.clock);
  REQUIRE(log.ok());
  REQUIRE(append_and_wait(**log, make_batch(0, 20)).ok());
  CHECK(j.fs.syncs(".log") == 1);
  CHECK(j.fs.syncs(".journal") == 0);
}

// A store whose partitions wrote through the journal, cut before any of it reached their segments.
TEST_CASE("journal: a store replays the journal at open, and a deleted stream's records stay out") {
  testing::TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool{2};
  ManualClock clock;
  Policy policy;
  policy.partitions = 2;
  {
    auto store = StreamStore::open(fs, dir.path(), pool, clock);
    REQUIRE(store.ok());
    REQUIRE((*store)->create("kept", policy).ok());
    REQUIRE((*store)->create("gone", policy).ok());
  }
  auto journal = Journal::open(fs, dir.file("journal"), dir.file("streams"), 7);
  REQUIRE(journal.ok());
  std::vector<std::unique_ptr<PartitionLog>> logs;
  for (const char* stream : {"kept", "gone"}) {
    PartitionOptions options = testing::small_partition_options(1 << 20);
    options.journal = journal->get();
    auto log = PartitionLog::open(fs, dir.file("streams") + "/" + stream + "/1", options, pool, clock);
    REQUIRE(log.ok());
    logs.push_back(std::move(log).value());
  }
  append_everywhere(logs, 3);
  REQUIRE((*journal)->forget("gone").ok());
  for (auto& log : logs) log->close(PartitionLog::CloseMode::kAsIs);
  logs.clear();
  (*journal)->close(Journal::CloseMode::kAsIs);
  journal->reset();
  REQUIRE(fs.drop_unsynced_data().ok());

  auto store = StreamStore::open(fs, dir.path(), pool, clock);
  REQUIRE(store.ok());
  auto kept = (*store)->find("kept");
  REQUIRE(kept.ok());
  CHECK((*kept)->partition(PartitionId(1))->bounds() == Bounds{Offset(0), Offset(6)});
  check_payloads(*(*kept)->partition(PartitionId(1)), 6);
  auto gone = (*store)->find("gone");
  REQUIRE(gone.ok());
  CHECK((*gone)->partition(PartitionId(1))->bounds().next == Offset(0));
  // Replayed: only the store's new journal file is left, numbered after the one read.
  CHECK(journal_files(dir.file("journal")) == std::vector<std::string>{Journal::file_name(8)});
}

TEST_CASE("journal: deleting a stream writes its forget record before a stream of that name is created again") {
  testing::TempDir dir;
  FaultInjectionFileSystem fs;
  ThreadPool pool{2};
  ManualClock clock;
  auto store = StreamStore::open(fs, dir.path(), pool, clock);
  REQUIRE(store.ok());
  auto journaled = [&] {
    auto contents = read_journal(fs, dir.file("journal"));
    REQUIRE(contents.ok());
    auto it = contents->batches.find("s/0");
    return it == contents->batches.end() ? std::vector<std::string>{} : it->second;
  };
  auto s = (*store)->create("s", Policy{});
  REQUIRE(s.ok());
  for (uint64_t i = 0; i < 3; ++i) REQUIRE(append_and_wait(*(*s)->partition(PartitionId(0)), make_batch(i, 1)).ok());
  CHECK(journaled().size() == 3);
  REQUIRE((*store)->remove("s").ok());
  CHECK(journaled().empty());
  auto again = (*store)->create("s", Policy{});
  REQUIRE(again.ok());
  REQUIRE(append_and_wait(*(*again)->partition(PartitionId(0)), make_batch(0, 1)).ok());
  const auto now = journaled();
  REQUIRE(now.size() == 1);
  CHECK(peek_header(now[0]).base_offset == Offset(0));
  CHECK(peek_header(now[0]).record_count == 1);
}

}  // namespace
}  // namespace streamd
