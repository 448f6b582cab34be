// bench/soak: hours of mixed work against the real daemon, watching whether its memory or open
// descriptors grow (docs/RELIABILITY.md §Soak). Starts streamd on 127.0.0.1 (ephemeral ports, a temp
// data directory), runs the workers of workers.h for --minutes, samples the daemon's RSS and fds every
// second, stops it with SIGTERM, prints a summary and exits non-zero when a resource grew, an error
// was counted, or the daemon did not stop cleanly.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bench/soak_tool/resource_sampler.h"
#include "bench/soak_tool/workers.h"
#include "tests/support/daemon_fixture.h"

using namespace streamd;

int main(int argc, char** argv) {
  CLI::App app{"bench/soak: mixed load against streamd, watching its memory and descriptors", "soak"};
  double minutes = 60;
  soak::SoakOptions options;
  app.add_option("--minutes", minutes, "how long to run (fractions allowed)")->check(CLI::PositiveNumber);
  app.add_option("--rate", options.rate, "appends per second per producer (3 producers)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  testing::DaemonProcess daemon({"--retention-check-period", "1s", "--compaction-period",
                                 std::to_string(soak::kCompactionPeriod.count()) + "s", "--storage-threads",
                                 "2", "--log-level", "warn"});
  if (!daemon.start()) {
    std::fprintf(stderr, "soak: streamd did not start:\n%s\n", daemon.log().c_str());
    return 1;
  }
  options.port = daemon.port();
  soak::Tally tally;
  soak::Workers workers(options, tally);
  if (!workers.create_streams()) {
    std::fprintf(stderr, "soak: cannot create the streams: %s\n",
                 tally.first_errors().empty() ? "?" : tally.first_errors().front().c_str());
    return 1;
  }
  std::printf("soak: %.1f minutes against streamd pid %d on 127.0.0.1:%u, %d appends/s per producer\n", minutes,
              static_cast<int>(daemon.pid()), unsigned{daemon.port()}, options.rate);
  std::fflush(stdout);

  soak::ResourceSampler sampler(daemon.pid());
  workers.start();
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double, std::ratio<60>>(minutes));
  for (int minute = 1; std::chrono::steady_clock::now() < end; ++minute) {
    std::this_thread::sleep_until(std::min(end, start + std::chrono::minutes(minute)));
    const auto samples = sampler.samples();
    if (samples.empty()) continue;
    std::printf("  %5.1f min: rss %.1f MiB (anon %.1f), %llu fds, %llu appends, %llu errors\n",
                samples.back().at_s / 60, static_cast<double>(samples.back().rss) / (1 << 20),
                static_cast<double>(samples.back().rss_anon) / (1 << 20),
                static_cast<unsigned long long>(samples.back().fds),
                static_cast<unsigned long long>(tally.counts()["append"]),
                static_cast<unsigned long long>(tally.errors()));
    std::fflush(stdout);
  }
  workers.stop();
  sampler.stop();
  const double ran_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int exit_code = daemon.stop(std::chrono::seconds(30));

  const soak::Verdict verdict = sampler.verdict(std::chrono::duration<double>(soak::kWarmUp).count());
  std::printf("soak summary: %.1f minutes, %zu samples\n", ran_s / 60, sampler.samples().size());
  for (const std::string& line : verdict.lines) std::printf("  %s\n", line.c_str());
  std::printf("  operations:");
  for (const auto& [op, n] : tally.counts()) std::printf(" %s %llu;", op.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n  errors: %llu\n", static_cast<unsigned long long>(tally.errors()));
  for (const std::string& e : tally.first_errors()) std::printf("    %s\n", e.c_str());
  std::printf("  daemon exit code after SIGTERM: %d\n", exit_code);
  const bool ok = verdict.decided && !verdict.grew && tally.errors() == 0 && exit_code == 0;
  std::printf("soak: %s\n", ok ? "ok" : "FAILED");
  if (!ok && exit_code != 0) std::fprintf(stderr, "daemon log:\n%s\n", daemon.log().c_str());
  return ok ? 0 : 1;
}
