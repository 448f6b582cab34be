// StreamCatalog's part in an engine's capacity (server/broker/engine_budget.h): the memory engine frees
// a deleted stream's bytes only when the last holder of the stream lets go, which may be after the delete.
#include "server/broker/stream_catalog.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <string>

#include "server/broker/memory/memory_engine.h"
#include "server/storage/batch_builder.h"
#include "server/storage/record_batch.h"
#include "tests/broker/manual_scheduler.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;

TEST_CASE("the room a deleted stream frees is offered to the waiters when its last holder lets go") {
  ThreadPool pool(1);
  ManualClock clock;
  testing::ManualScheduler scheduler;
  MemoryEngine engine(1000, pool, clock);
  StreamCatalog catalog(engine, scheduler, 10);
  Policy waits;
  waits.max_bytes = 1 << 20;
  waits.block_timeout = milliseconds(500);
  REQUIRE(catalog.create("a", Policy{}, false, nullptr).ok());
  REQUIRE(catalog.create("b", waits, false, nullptr).ok());

  auto found = catalog.find("a");
  REQUIRE(found.ok());
  std::shared_ptr<OpenStream> holder = std::move(found).value();  // as an append or read still running
  BatchBuilder builder;
  builder.add("", std::string(1000, 'x'));
  std::promise<Result<AppendRange>> written;
  holder->stream->partition(PartitionId(0))->append(std::move(builder).finish(), [&](Result<AppendRange> r) {
    written.set_value(std::move(r));
  });
  REQUIRE(written.get_future().get().ok());
  REQUIRE(engine.size_bytes() >= 1000);

  auto b = catalog.find("b");
  REQUIRE(b.ok());
  std::atomic<bool> admitted{false};
  std::atomic<bool> refused{false};
  (*b)->backpressure->acquire(
      10, [&] { admitted = true; }, [&](const Status&) { refused = true; });
  CHECK_FALSE(admitted.load());  // the engine is full

  REQUIRE(catalog.remove("a", false, nullptr).ok());
  CHECK(engine.size_bytes() >= 1000);  // still held
  CHECK_FALSE(admitted.load());

  holder.reset();
  CHECK(engine.size_bytes() == 0);
  CHECK(admitted.load());
  CHECK_FALSE(refused.load());
}

}  // namespace
}  // namespace streamd
