#include "server/http_api/history.h"

#include <set>

namespace streamd::http_api {
namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::function<Totals()> History::counters_of(const MetricsRegistry& metrics) {
  // Found again until registered (the Kafka listener may not run at all); a counter, once there,
  // lives as long as the registry.
  struct Source {
    const char* name;
    const Counter* counter = nullptr;
  };
  auto sources = std::make_shared<std::array<std::vector<Source>, 4>>(std::array<std::vector<Source>, 4>{
      std::vector<Source>{{"streamd_appended_records_total"},
                          {"streamd_kafka_produced_records_total"},
                          {"streamd_http_appended_records_total"}},
      std::vector<Source>{{"streamd_appended_bytes_total"},
                          {"streamd_kafka_produced_bytes_total"},
                          {"streamd_http_appended_bytes_total"}},
      std::vector<Source>{{"streamd_read_records_total"},
                          {"streamd_kafka_fetched_records_total"},
                          {"streamd_http_read_records_total"}},
      std::vector<Source>{{"streamd_read_bytes_total"},
                          {"streamd_kafka_fetched_bytes_total"},
                          {"streamd_http_read_bytes_total"}}});
  return [&metrics, sources] {
    uint64_t sums[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < 4; ++i) {
      for (Source& s : (*sources)[i]) {
        if (s.counter == nullptr) s.counter = metrics.find_counter(s.name);
        if (s.counter != nullptr) sums[i] += s.counter->value();
      }
    }
    return Totals{sums[0], sums[1], sums[2], sums[3]};
  };
}

void History::start(Scheduler& scheduler, Executor& workers, const Broker& broker) {
  scheduler_ = &scheduler;
  workers_ = &workers;
  broker_ = &broker;
  {
    std::lock_guard lock(mu_);
    last_ = totals_();
    last_ms_ = wall_ms();
  }
  tick();
}

void History::stop() {
  std::function<void()> cancel;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    cancel = std::move(cancel_);
  }
  if (cancel) cancel();
}

void History::tick() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  cancel_ = scheduler_->schedule_after(kRateInterval, [this] {
    const int64_t now = wall_ms();
    sample_rates(now);
    bool lag_due = false;
    {
      std::lock_guard inner(mu_);
      lag_due = ++ticks_ % (kLagInterval / kRateInterval) == 0 && !lag_running_ && !stopped_;
      lag_running_ = lag_running_ || lag_due;
    }
    if (lag_due) {
      workers_->post([this, now] {
        sample_lag(*broker_, now);
        std::lock_guard inner(mu_);
        lag_running_ = false;
      });
    }
    tick();
  });
}

void History::sample_rates(int64_t now_ms) {
  const Totals now = totals_();
  std::lock_guard lock(mu_);
  const double seconds = std::max<double>(0.001, static_cast<double>(now_ms - last_ms_) / 1000.0);
  auto rate = [seconds](uint64_t after, uint64_t before) {
    return after >= before ? static_cast<double>(after - before) / seconds : 0.0;
  };
  rates_.push(RateSample{now_ms, rate(now.append_records, last_.append_records),
                         rate(now.append_bytes, last_.append_bytes), rate(now.read_records, last_.read_records),
                         rate(now.read_bytes, last_.read_bytes)});
  last_ = now;
  last_ms_ = now_ms;
}

void History::sample_lag(const Broker& broker, int64_t now_ms) {
  std::map<std::pair<std::string, std::string>, uint64_t> lag;
  for (const StreamSummary& s : broker.list_streams()) {
    auto groups = broker.list_groups(s.name);
    if (!groups.ok()) continue;  // deleted since it was listed
    for (const GroupOffset& g : *groups) lag[{s.name, g.group}] += g.lag;
  }
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const auto& [key, records] : lag) {
    total += records;
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      if (groups_.size() >= kMaxGroups) continue;
      it = groups_.emplace(key, std::make_unique<LagRing>()).first;
    }
    it->second->push(LagSample{now_ms, records});
  }
  // Groups that are gone (their stream deleted) give their slots back.
  std::erase_if(groups_, [&](const auto& entry) { return lag.find(entry.first) == lag.end(); });
  total_lag_.push(LagSample{now_ms, total});
}

std::vector<RateSample> History::rates(int64_t since_ms) const {
  std::vector<RateSample> out;
  std::lock_guard lock(mu_);
  rates_.for_each([&](const RateSample& s) {
    if (s.time_ms > since_ms) out.push_back(s);
  });
  return out;
}

std::vector<LagSample> History::total_lag(int64_t since_ms) const {
  std::vector<LagSample> out;
  std::lock_guard lock(mu_);
  total_lag_.for_each([&](const LagSample& s) {
    if (s.time_ms > since_ms) out.push_back(s);
  });
  return out;
}

std::vector<LagSample> History::group_lag(const std::string& stream, const std::string& group) const {
  std::vector<LagSample> out;
  std::lock_guard lock(mu_);
  auto it = groups_.find({stream, group});
  if (it != groups_.end()) it->second->for_each([&](const LagSample& s) { out.push_back(s); });
  return out;
}

}  // namespace streamd::http_api
