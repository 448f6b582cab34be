#include "server/broker/backpressure.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/broker/broker_fixture.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::check_error;
using testing::ManualScheduler;

// What happened to each acquire, in order.
struct Log {
  std::vector<std::string> events;
  Backpressure::Admitted admitted(std::string name) {
    return [this, name] { events.push_back(name + " admitted"); };
  }
  Backpressure::Refused refused(std::string name) {
    return [this, name](Status s) { events.push_back(name + " " + std::string(s.name())); };
  }
};

struct BackpressureFixture {
  explicit BackpressureFixture(milliseconds timeout = milliseconds(100)) {
    bp = std::make_shared<Backpressure>("s", 1000, timeout, scheduler, [this] { return stored.load(); });
  }
  ManualScheduler scheduler;
  std::atomic<uint64_t> stored{0};
  std::shared_ptr<Backpressure> bp;
  Log log;
};

TEST_CASE("appends are admitted while the stream holds less than max_bytes, in-flight bytes included") {
  BackpressureFixture f;
  f.stored = 600;
  f.bp->acquire(300, f.log.admitted("a"), f.log.refused("a"));  // 600 < 1000
  f.bp->acquire(300, f.log.admitted("b"), f.log.refused("b"));  // 900 < 1000: may overshoot by one batch
  f.bp->acquire(1, f.log.admitted("c"), f.log.refused("c"));    // 1200: full
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
  CHECK(f.bp->waiting() == 1);
}

TEST_CASE("a zero block_timeout refuses a full stream at once with STREAM_FULL and its figures") {
  BackpressureFixture f(milliseconds(0));
  f.stored = 1000;
  Status refusal;
  f.bp->acquire(10, [] { FAIL("admitted"); }, [&](Status s) { refusal = std::move(s); });
  check_error(refusal, Code::kStreamFull,
              {{"stream", "s"}, {"max_bytes", "1000"}, {"bytes", "1000"}, {"block_timeout_ms", "0"}});
  CHECK(f.scheduler.pending() == 0);
}

TEST_CASE("a waiter is admitted when room is freed, in arrival order, and its timer is cancelled") {
  BackpressureFixture f;
  f.stored = 1000;
  f.bp->acquire(100, f.log.admitted("a"), f.log.refused("a"));
  f.bp->acquire(100, f.log.admitted("b"), f.log.refused("b"));
  CHECK(f.scheduler.pending() == 2);
  f.bp->room_freed();  // nothing freed yet
  CHECK(f.log.events.empty());
  f.stored = 850;
  f.bp->room_freed();  // 850, then 950 with a in flight: both below 1000
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
  CHECK(f.scheduler.pending() == 0);
  f.scheduler.advance(milliseconds(1000));
  CHECK(f.log.events.size() == 2);
}

TEST_CASE("a waiter still waiting at block_timeout is refused STREAM_FULL, the next one still waits") {
  BackpressureFixture f;
  f.stored = 1000;
  f.bp->acquire(100, f.log.admitted("a"), f.log.refused("a"));
  f.scheduler.advance(milliseconds(60));
  f.bp->acquire(100, f.log.admitted("b"), f.log.refused("b"));
  f.scheduler.advance(milliseconds(40));
  CHECK(f.log.events == std::vector<std::string>{"a STREAM_FULL"});
  f.stored = 0;
  f.bp->room_freed();
  CHECK(f.log.events == std::vector<std::string>{"a STREAM_FULL", "b admitted"});
}

TEST_CASE("while appends wait, a newcomer queues behind them even when room appears for it") {
  BackpressureFixture f;
  f.stored = 1000;
  f.bp->acquire(100, f.log.admitted("a"), f.log.refused("a"));
  f.stored = 0;  // freed, but nobody said so yet
  f.bp->acquire(100, f.log.admitted("b"), f.log.refused("b"));
  CHECK(f.log.events.empty());
  f.bp->room_freed();
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
}

TEST_CASE("release of an append's bytes admits waiters when it frees room") {
  BackpressureFixture f;
  f.bp->acquire(1000, f.log.admitted("a"), f.log.refused("a"));
  f.bp->acquire(10, f.log.admitted("b"), f.log.refused("b"));
  CHECK(f.log.events == std::vector<std::string>{"a admitted"});
  f.bp->release(1000);  // a failed: nothing was stored
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
}

TEST_CASE("shut refuses every waiter and every later acquire with its status") {
  BackpressureFixture f;
  f.stored = 1000;
  f.bp->acquire(1, f.log.admitted("a"), f.log.refused("a"));
  f.bp->shut(Status::of(Code::kStreamNotFound));
  f.stored = 0;
  f.bp->acquire(1, f.log.admitted("b"), f.log.refused("b"));
  CHECK(f.log.events == std::vector<std::string>{"a STREAM_NOT_FOUND", "b STREAM_NOT_FOUND"});
  CHECK(f.scheduler.pending() == 0);
}

TEST_CASE("set_limits: a larger max_bytes admits waiters, zero bounds nothing, a new block_timeout decides later waits") {
  BackpressureFixture f;
  f.stored = 1000;
  f.bp->acquire(100, f.log.admitted("a"), f.log.refused("a"));
  f.bp->acquire(100, f.log.admitted("b"), f.log.refused("b"));
  f.bp->set_limits(1150, milliseconds(100));  // room for a (1000 < 1150), then b would find 1100 < 1150
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
  CHECK(f.scheduler.pending() == 0);

  f.bp->set_limits(1000, milliseconds(0));  // 1000 stored + 200 in flight: full, and refused at once
  f.bp->acquire(1, f.log.admitted("c"), f.log.refused("c"));
  CHECK(f.log.events.back() == "c STREAM_FULL");

  f.bp->set_limits(1000, milliseconds(500));
  f.bp->acquire(1, f.log.admitted("d"), f.log.refused("d"));
  f.scheduler.advance(milliseconds(499));
  CHECK(f.bp->waiting() == 1);
  f.bp->set_limits(0, milliseconds(0));  // unbounded: the waiter goes at once
  CHECK(f.log.events.back() == "d admitted");
  f.bp->acquire(1'000'000, f.log.admitted("e"), f.log.refused("e"));
  CHECK(f.log.events.back() == "e admitted");
}

TEST_CASE("try_acquire admits only where acquire would at once, and otherwise admits nothing") {
  BackpressureFixture f;
  f.stored = 600;
  CHECK(f.bp->try_acquire(300));   // 900 < 1000
  CHECK(f.bp->try_acquire(300));   // 1200 counted from here: full
  CHECK_FALSE(f.bp->try_acquire(1));
  f.bp->release(300);              // 900 again: room
  f.bp->acquire(1, f.log.admitted("a"), f.log.refused("a"));  // admitted at once
  f.stored = 1000;                 // the stream itself fills
  f.bp->acquire(5, f.log.admitted("b"), f.log.refused("b"));  // waits
  CHECK(f.bp->waiting() == 1);
  f.stored = 0;
  // Room, but an append waits: a later one must not overtake it.
  CHECK_FALSE(f.bp->try_acquire(1));
  f.bp->room_freed();
  CHECK(f.log.events == std::vector<std::string>{"a admitted", "b admitted"});
  CHECK(f.bp->try_acquire(1));
  f.bp->shut(Status::of(Code::kStreamNotFound));
  CHECK_FALSE(f.bp->try_acquire(1));
}

}  // namespace
}  // namespace streamd
