// History: the last hour of the broker's own rates and group lag, kept in memory for the console's
// charts, so no Prometheus is needed to see what just happened (docs/CONSOLE.md §Overview).
//
// Every second it reads the append and read counters every protocol keeps (native, Kafka, HTTP) —
// a few relaxed atomic loads — into a fixed ring of 3,600 rate samples. Every ten seconds, on a
// worker, it sums each group's lag over its stream's partitions into a ring of 360 samples per
// group, for at most kMaxGroups groups (the first seen; a group deleted with its stream frees its
// slot). Its memory is fixed: about 150 KB for rates and 3 KB per group. RabbitMQ's statistics
// database, which grew with every queue and connection, is what a fixed ring avoids.
//
// Threading: start() and stop() from one thread; the samplers run on the scheduler's thread and a
// worker; readers on any thread. One mutex guards the rings.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/broker/broker.h"
#include "server/metrics/metrics.h"
#include "server/storage/executor.h"

namespace streamd::http_api {

struct RateSample {
  int64_t time_ms = 0;  // wall clock, milliseconds since the Unix epoch
  double append_records = 0;  // per second, over the interval before time_ms
  double append_bytes = 0;
  double read_records = 0;
  double read_bytes = 0;
};

struct LagSample {
  int64_t time_ms = 0;
  uint64_t lag = 0;  // records
};

// Running totals the rates are taken from.
struct Totals {
  uint64_t append_records = 0;
  uint64_t append_bytes = 0;
  uint64_t read_records = 0;
  uint64_t read_bytes = 0;
};

class History {
 public:
  static constexpr size_t kRateSamples = 3600;
  static constexpr size_t kLagSamples = 360;
  static constexpr size_t kMaxGroups = 256;
  static constexpr std::chrono::milliseconds kRateInterval{1000};
  static constexpr std::chrono::milliseconds kLagInterval{10000};

  // The counters every protocol keeps, by their /metrics names, summed.
  static std::function<Totals()> counters_of(const MetricsRegistry& metrics);

  explicit History(std::function<Totals()> totals) : totals_(std::move(totals)) {}

  void start(Scheduler& scheduler, Executor& workers, const Broker& broker);
  void stop();

  // One rate sample now (the timer's work; tests call it with their own clock).
  void sample_rates(int64_t now_ms);
  // One lag sample of every group now (reads group offsets; a worker's work).
  void sample_lag(const Broker& broker, int64_t now_ms);

  std::vector<RateSample> rates(int64_t since_ms) const;
  std::vector<LagSample> total_lag(int64_t since_ms) const;
  std::vector<LagSample> group_lag(const std::string& stream, const std::string& group) const;

 private:
  template <class T, size_t N>
  struct Ring {
    std::array<T, N> items{};
    size_t next = 0;
    size_t size = 0;
    void push(const T& t) {
      items[next] = t;
      next = (next + 1) % N;
      size = std::min(size + 1, N);
    }
    template <class F>
    void for_each(F f) const {
      for (size_t i = 0; i < size; ++i) f(items[(next + N - size + i) % N]);
    }
  };
  using LagRing = Ring<LagSample, kLagSamples>;

  void tick();

  const std::function<Totals()> totals_;
  Scheduler* scheduler_ = nullptr;
  Executor* workers_ = nullptr;
  const Broker* broker_ = nullptr;

  mutable std::mutex mu_;
  bool stopped_ = false;
  std::function<void()> cancel_;
  uint64_t ticks_ = 0;
  bool lag_running_ = false;
  Totals last_;
  int64_t last_ms_ = 0;
  Ring<RateSample, kRateSamples> rates_;
  LagRing total_lag_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<LagRing>> groups_;
};

}  // namespace streamd::http_api
