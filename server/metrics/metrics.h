// MetricsRegistry: the broker's counters, gauges and histograms, rendered in the Prometheus text
// exposition format (version 0.0.4) for GET /metrics.
//
// A metric is registered once by name, help and label set, and the returned reference stays valid for
// the registry's life, so hot paths keep it and pay one relaxed atomic add per update, from any thread.
// Values only known at scrape time (per-partition offsets and sizes) come from collectors, called on
// every render(). Families render sorted by name, each with its HELP and TYPE lines. Registration and
// render() take a mutex; updates do not.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace streamd {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Cumulative buckets with upper bounds `bounds` (ascending) plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per bucket (not cumulative), the last one being +Inf.
  std::vector<uint64_t> bucket_counts() const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Bucket bounds for latencies in seconds, 50µs to 10s.
std::vector<double> latency_buckets();
// Powers of two from 1 to `max` (counts such as batches per sync).
std::vector<double> exponential_buckets(double max);

// What a collector writes samples into during render().
class MetricsWriter {
 public:
  virtual ~MetricsWriter() = default;
  virtual void gauge(std::string_view name, std::string_view help, const Labels& labels, double value) = 0;
  virtual void counter(std::string_view name, std::string_view help, const Labels& labels, double value) = 0;
};

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The same name and labels return the same metric.
  Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& histogram(std::string_view name, std::string_view help, std::vector<double> bounds,
                       const Labels& labels = {});
  void add_collector(Collector collector);
  // The counter of that name without labels, or nullptr when nothing registered it: for readers
  // that must not create a family (which /metrics would then show) by asking.
  const Counter* find_counter(std::string_view name) const;
  const Gauge* find_gauge(std::string_view name) const;

  std::string render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    std::string help;
    Type type;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(std::string_view name, std::string_view help, Type type);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;
  std::vector<Collector> collectors_;
};

// Prometheus text escaping: label values escape backslash, double quote and newline; HELP text
// escapes backslash and newline.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);

}  // namespace streamd
