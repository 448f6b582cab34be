#include "tests/load/load_fixture.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "tests/load/process_stats.h"
#include "tests/support/prometheus_text.h"

namespace streamd::testing {
namespace {

void print_phase(const char* phase, const ProbeResult& r) {
  std::printf("  %-12s append p50 %7.3f ms  p99 %7.3f ms   read p50 %7.3f ms  p99 %7.3f ms  (%zu rounds)\n", phase,
              r.append.percentile(50), r.append.percentile(99), r.read.percentile(50), r.read.percentile(99),
              r.append.ms.size());
}

}  // namespace

LoadFixture::LoadFixture(std::vector<std::string> daemon_args) : daemon_(std::move(daemon_args)) {
  REQUIRE(daemon_.start());
  probe_client_ = std::make_unique<WireClient>(daemon_.port());
  REQUIRE(probe_client_->connected());
  REQUIRE(probe_client_->call(create_request("probe", 1)).has_create_stream());
  rss_peak_ = rss_now();
  sampler_ = std::thread([this] {
    while (!stop_) {
      const uint64_t rss = rss_now();
      uint64_t peak = rss_peak_.load();
      while (rss > peak && !rss_peak_.compare_exchange_weak(peak, rss)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

LoadFixture::~LoadFixture() {
  stop_ = true;
  sampler_.join();
  probe_client_.reset();
  if (daemon_.running()) CHECK(daemon_.stop() == 0);
}

uint64_t LoadFixture::rss_now() const {
  return resident_bytes(daemon_.pid()).value_or(0);
}

double LoadFixture::metric(const std::string& name) const {
  HttpReply reply = daemon_.http_get("/metrics");
  auto parsed = parse_prometheus_text(reply.body);
  if (!parsed.exposition) return -1;
  return parsed.exposition->value(name).value_or(-1);
}

ProbeResult LoadFixture::measure() {
  ProbeResult r = probe(*probe_client_, "probe", kProbeRounds);
  INFO(r.first_failure);
  CHECK(r.failures == 0);
  return r;
}

void LoadFixture::measure_loaded() {
  for (loaded_attempts_ = 1;; ++loaded_attempts_) {
    during_ = measure();
    const bool within = during_.append.percentile(99) <= allowed_p99(before_.append.percentile(99), 0) &&
                        during_.read.percentile(99) <= allowed_p99(before_.read.percentile(99), 0);
    if (within || loaded_attempts_ == kLoadedAttempts) return;
  }
}

void LoadFixture::check_latency(const std::string& name) const {
  std::printf("%s:\n", name.c_str());
  print_phase("idle before", before_);
  print_phase("loaded", during_);
  if (loaded_attempts_ > 1) std::printf("  (loaded: the last of %d measurements)\n", loaded_attempts_);
  print_phase("idle after", after_);
  const double append_bound = allowed_p99(before_.append.percentile(99), after_.append.percentile(99));
  const double read_bound = allowed_p99(before_.read.percentile(99), after_.read.percentile(99));
  std::printf("  bound        append p99 %7.3f ms   read p99 %7.3f ms; daemon RSS peak %.1f MiB\n", append_bound,
              read_bound, static_cast<double>(rss_peak_.load()) / (1 << 20));
  std::fflush(stdout);
  CHECK(during_.append.percentile(99) <= append_bound);
  CHECK(during_.read.percentile(99) <= read_bound);
}

}  // namespace streamd::testing
