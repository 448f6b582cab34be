// The broker's clock, behind an interface so tests can drive time (retention, compaction windows,
// OffsetAt) without sleeping. Implementations are thread-safe.
#pragma once

#include <atomic>
#include <chrono>

#include "server/storage/types.h"

namespace streamd {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Timestamp now() const override {
    auto since = std::chrono::system_clock::now().time_since_epoch();
    return Timestamp(std::chrono::duration_cast<std::chrono::microseconds>(since).count());
  }
  static SystemClock& instance() {
    static SystemClock clock;
    return clock;
  }
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp(1'700'000'000'000'000)) : now_(start.micros) {}
  Timestamp now() const override { return Timestamp(now_.load()); }
  void set(Timestamp t) { now_.store(t.micros); }
  void advance(std::chrono::microseconds d) { now_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace streamd
