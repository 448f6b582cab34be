// What every load test shares: the real daemon, a probe client measured idle, under the load and idle
// again (latency_probe.h), the daemon's memory sampled throughout, and a report of the figures on
// standard output (ctest -V shows them; docs/RELIABILITY.md records a run).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/wire_client.h"
#include "tests/load/latency_probe.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {

// Rounds per probe phase: enough that a p99 is the 10th-worst of a thousand samples, not one outlier.
inline constexpr int kProbeRounds = 1000;
inline constexpr int kLoadedAttempts = 3;

class LoadFixture {
 public:
  explicit LoadFixture(std::vector<std::string> daemon_args);
  ~LoadFixture();

  DaemonProcess& daemon() { return daemon_; }
  uint16_t port() const { return daemon_.port(); }
  WireClient& probe_client() { return *probe_client_; }

  // The phases, in this order: idle, then (with the load running) loaded, then idle again. The loaded
  // phase is measured again, up to kLoadedAttempts times in all, while its p99s exceed the bound
  // against the idle phase before it: a burst of noise from outside the test (another process on the
  // two cores) spoils one sample, whereas a broker the load really slows fails every one.
  void measure_idle_before() { before_ = measure(); }
  void measure_loaded();
  void measure_idle_after() { after_ = measure(); }

  // The daemon's RSS now, and the highest seen by the sampler (every 100 ms since construction).
  uint64_t rss_now() const;
  uint64_t rss_peak() const { return rss_peak_.load(); }
  // The value of a metric with no labels from /metrics (-1 when absent).
  double metric(const std::string& name) const;

  // Prints the phases' figures under `name` and checks the loaded p99s against allowed_p99().
  void check_latency(const std::string& name) const;

 private:
  ProbeResult measure();

  DaemonProcess daemon_;
  std::unique_ptr<WireClient> probe_client_;
  ProbeResult before_, during_, after_;
  int loaded_attempts_ = 0;
  std::atomic<uint64_t> rss_peak_{0};
  std::atomic<bool> stop_{false};
  std::thread sampler_;
};

}  // namespace streamd::testing
