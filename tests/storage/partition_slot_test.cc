// Tests of server/storage/partition_slot.cc and open_partitions.cc: partitions that close when idle and
// open again on use, and the sweeps that keep the files they hold within a limit.
#include "server/storage/partition_slot.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "server/storage/open_partitions.h"
#include "tests/storage/log_fixture.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::make_batch;
using testing::read_all;

struct SlotFixture {
  testing::TempDir dir;
  // Flushes run when a test drains it, so a slot whose appends were answered is idle for certain: on
  // a pool the flush ends its turn a moment after the answer, and a close in that moment finds it busy.
  testing::ManualExecutor executor;
  ManualClock clock;
  testing::ManualExecutor background;  // the sweeps that opens post, run only when a test says
  std::shared_ptr<OpenPartitions> cache;

  explicit SlotFixture(uint64_t max_files = 0) : cache(OpenPartitions::make(max_files, background)) {}
  std::shared_ptr<PartitionSlot> open(int p) {
    auto slot = PartitionSlot::open(posix_file_system(), dir.file("p" + std::to_string(p)),
                                    testing::small_partition_options(1024), executor, clock, cache);
    REQUIRE(slot.ok());
    cache->enlist(*slot);
    return *slot;
  }

  void append_records(PartitionSlot& slot, int batches) {
    for (int i = 0; i < batches; ++i) {
      std::optional<Result<AppendRange>> answer;
      slot.append(make_batch(slot.bounds().next.value, 3), [&](Result<AppendRange> r) { answer.emplace(std::move(r)); });
      executor.run_all();
      REQUIRE(answer.has_value());
      REQUIRE(answer->ok());
    }
  }
};

TEST_CASE("a closed slot answers its bounds, size and segments as it closed, and opens again to read",
          "[partition_slot]") {
  SlotFixture f;
  auto slot = f.open(0);
  f.append_records(*slot, 20);
  const Bounds bounds = slot->bounds();
  const uint64_t bytes = slot->size_bytes();
  const size_t segments = slot->segments().size();
  REQUIRE(segments >= 2);
  CHECK(slot->files() == 3 * segments);

  CHECK(slot->close_if_idle() == 3 * segments);
  CHECK_FALSE(slot->is_open());
  CHECK(slot->files() == 0);
  CHECK(slot->bounds() == bounds);
  CHECK(slot->size_bytes() == bytes);
  CHECK(slot->segments().size() == segments);
  CHECK_FALSE(slot->reads_tail(bounds.first));
  CHECK(std::filesystem::exists(f.dir.file("p0/clean")));

  auto records = read_all(*slot, bounds.first);
  CHECK(slot->is_open());
  REQUIRE(records.size() == 60);
  CHECK(records.back().second == testing::payload_for(59));
}

TEST_CASE("appends to a closed slot open it on the executor and keep their sending order", "[partition_slot]") {
  SlotFixture f;
  auto slot = f.open(0);
  REQUIRE(slot->close_if_idle() > 0);
  std::vector<Result<AppendRange>> answers;
  for (uint64_t i = 0; i < 4; ++i) {
    slot->append(make_batch(i, 1), [&](Result<AppendRange> r) { answers.push_back(std::move(r)); });
  }
  // Nothing opened on the caller's thread.
  CHECK_FALSE(slot->is_open());
  CHECK(answers.empty());
  f.executor.run_all();
  CHECK(slot->is_open());
  REQUIRE(answers.size() == 4);
  for (uint64_t i = 0; i < 4; ++i) {
    REQUIRE(answers[i].ok());
    CHECK(answers[i]->first == Offset(i));
  }
}

TEST_CASE("a slot with appends queued or a caller inside is not closed", "[partition_slot]") {
  SlotFixture f;
  auto slot = f.open(0);
  std::optional<Result<AppendRange>> answer;
  slot->append(make_batch(0, 1), [&](Result<AppendRange> r) { answer.emplace(std::move(r)); });
  CHECK(slot->close_if_idle() == 0);
  CHECK(slot->is_open());
  f.executor.run_all();
  REQUIRE(answer.has_value());
  REQUIRE(answer->ok());
  // Idle now: it closes, and the record survives the close.
  CHECK(slot->close_if_idle() > 0);
  CHECK(slot->bounds() == Bounds{Offset(0), Offset(1)});
}

TEST_CASE("retention decides on a closed slot's segments and opens it only to drop some", "[partition_slot]") {
  SlotFixture f;
  auto slot = f.open(0);
  f.append_records(*slot, 40);
  const std::vector<SegmentInfo> segments = slot->segments();
  REQUIRE(segments.size() >= 3);
  REQUIRE(slot->close_if_idle() > 0);

  REQUIRE(slot->drop_front_segments([](const SegmentInfo&) { return false; }).ok());
  REQUIRE(slot->roll_active_if([](const SegmentInfo&) { return false; }).ok());
  CHECK_FALSE(slot->is_open());

  int asked = 0;
  REQUIRE(slot->drop_front_segments([&](const SegmentInfo&) { return ++asked == 1; }).ok());
  CHECK(asked == 2);  // the predicate ran once per segment decided, on the remembered segments
  CHECK(slot->is_open());
  CHECK(slot->bounds().first == segments[1].base);
  CHECK(slot->segments().size() == segments.size() - 1);
}

TEST_CASE("a slot closed for good refuses appends, and reads of one that was closed", "[partition_slot]") {
  SlotFixture f;
  auto slot = f.open(0);
  f.append_records(*slot, 1);
  REQUIRE(slot->close_if_idle() > 0);
  slot->close();
  auto appended = append_and_wait(*slot, make_batch(3, 1));
  REQUIRE_FALSE(appended.ok());
  CHECK(appended.status().code() == Code::kUnavailable);
  CHECK(slot->read(Offset(0), 10, 1 << 20).status().code() == Code::kUnavailable);
  CHECK(slot->bounds() == Bounds{Offset(0), Offset(3)});
  CHECK(slot->close_if_idle() == 0);
}

TEST_CASE("a sweep closes the least recently used idle partitions until the files fit", "[partition_slot]") {
  // Three files per single-segment partition: 24 files for 8 partitions, a limit of 12.
  SlotFixture f(12);
  std::vector<std::shared_ptr<PartitionSlot>> slots;
  for (int p = 0; p < 8; ++p) slots.push_back(f.open(p));
  CHECK(f.cache->over_limit());
  CHECK(f.background.pending() == 1);  // one sweep posted, however many opens found the limit passed
  const uint64_t held = f.cache->sweep();
  CHECK(held <= 12 - 12 / 8);
  CHECK(f.cache->open_files() == held);
  size_t open = 0;
  for (const auto& s : slots) open += s->is_open() ? 1 : 0;
  CHECK(open * 3 == held);

  // Every partition still takes appends and reads, opening as it must; a sweep closes others again.
  for (auto& s : slots) f.append_records(*s, 1);
  f.cache->sweep();
  CHECK(f.cache->open_files() <= 12);
  for (auto& s : slots) CHECK(read_all(*s, Offset(0)).size() == 3);
}

TEST_CASE("without a limit a sweep closes nothing", "[partition_slot]") {
  SlotFixture f;
  auto a = f.open(0);
  auto b = f.open(1);
  CHECK_FALSE(f.cache->over_limit());
  CHECK(f.cache->sweep() == 6);
  CHECK(a->is_open());
  CHECK(b->is_open());
}

}  // namespace
}  // namespace streamd
