// PartitionLog's transactions (server/storage/partition_log.cc, partition_producers.cc): the last stable
// offset follows durable markers, and open and aborted transactions survive a crash, with the producer
// snapshots written at rolls, without any, and through a clean close.
#include <catch2/catch.hpp>
#include <filesystem>

#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/partition_log.h"
#include "server/storage/txn_marker.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

std::string txn_batch(int64_t id, int32_t seq, uint32_t records) {
  BatchBuilder b(BatchOptions{false, true, false, {id, 0, seq}});
  for (uint32_t i = 0; i < records; ++i)
    b.add("", "txn-" + std::to_string(id) + "-" + std::to_string(seq + i));
  return std::move(b).finish();
}

struct TxnLog {
  testing::TempDir dir;
  ThreadPool pool{1};
  ManualClock clock;
  std::string part = dir.file("p0");
  std::unique_ptr<PartitionLog> log;

  TxnLog() { open(); }
  void open() {
    log.reset();
    // Small segments: the appends below roll several, each roll writing a producer snapshot.
    auto opened =
        PartitionLog::open(posix_file_system(), part, testing::small_partition_options(600), pool, clock);
    REQUIRE(opened.ok());
    log = std::move(*opened);
  }
  Offset append(std::string batch) {
    auto r = append_and_wait(*log, std::move(batch));
    REQUIRE(r.ok());
    return r->first;
  }
  void plain(int n) {
    for (int i = 0; i < n; ++i) append(testing::make_batch(log->bounds().next.value, 3));
  }
  size_t snapshots() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(part)) n += e.path().extension() == ".producers";
    return n;
  }
};

TEST_CASE(
    "partition transactions: the last stable offset holds at the open transaction until its marker is "
    "durable",
    "[partition_log]") {
  TxnLog t;
  t.plain(1);
  CHECK(t.log->last_stable() == Offset(3));
  const Offset first = t.append(txn_batch(1, 0, 2));
  t.plain(1);
  CHECK(t.log->last_stable() == first);
  CHECK(t.log->bounds().next == Offset(8));
  t.append(build_txn_marker(1, 0, MarkerType::kCommit, 0));
  CHECK(t.log->last_stable() == Offset(9));
  CHECK(t.log->open_transactions() == 0);
  // The resent marker is refused and takes no offset.
  auto again = append_and_wait(*t.log, build_txn_marker(1, 0, MarkerType::kCommit, 0));
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == Code::kInvalidTxnState);
  CHECK(t.log->bounds().next == Offset(9));
}

TEST_CASE("partition transactions: open and aborted transactions survive a crash, with or without snapshots",
          "[partition_log][recovery]") {
  TxnLog t;
  const Offset aborted_first = t.append(txn_batch(1, 0, 3));
  t.plain(4);
  const Offset abort_at = t.append(build_txn_marker(1, 0, MarkerType::kAbort, 0));
  const Offset open_first = t.append(txn_batch(2, 0, 3));
  t.plain(12);
  REQUIRE(t.snapshots() > 0);
  const Offset end = t.log->bounds().next;
  const std::vector<AbortedTxn> aborted{{1, aborted_first, abort_at}};
  auto check = [&](const char* how) {
    INFO(how);
    CHECK(t.log->bounds().next == end);
    CHECK(t.log->last_stable() == open_first);
    CHECK(*t.log->aborted_between(Offset(0), end) == aborted);
    // Producer 2's next batch must still be of its transaction, and its marker is taken.
    auto outside = append_and_wait(*t.log, [] {
      BatchBuilder b(BatchOptions{false, false, false, {2, 0, 3}});
      b.add("", "outside");
      return std::move(b).finish();
    }());
    REQUIRE_FALSE(outside.ok());
    CHECK(outside.status().code() == Code::kInvalidTxnState);
  };

  t.log->close(PartitionLog::CloseMode::kAsIs);
  t.open();
  check("from the newest snapshot and the batches after it");

  t.log->close(PartitionLog::CloseMode::kAsIs);
  for (const auto& e : std::filesystem::directory_iterator(t.part)) {
    if (e.path().extension() == ".producers") std::filesystem::remove(e.path());
  }
  t.open();
  check("from every batch, without a snapshot");

  t.log->close();
  t.open();
  check("from a clean close's summary");

  t.append(build_txn_marker(2, 0, MarkerType::kCommit, 0));
  CHECK(t.log->last_stable() == t.log->bounds().next);
}

}  // namespace
}  // namespace streamd
