#include "tests/load/latency_probe.h"

#include <algorithm>
#include <chrono>

#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

constexpr double kNoiseAllowanceMs = 0.25;

double since_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double Latencies::percentile(double p) const {
  if (ms.empty()) return 0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(rank, sorted.size() - 1)];
}

ProbeResult probe(WireClient& client, const std::string& stream, int rounds) {
  ProbeResult out;
  auto fail = [&out](std::string why) {
    if (out.failures++ == 0) out.first_failure = std::move(why);
  };
  if (!client.connected()) {
    fail("not connected");
    return out;
  }
  out.append.ms.reserve(static_cast<size_t>(rounds));
  out.read.ms.reserve(static_cast<size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    const std::string payload = "probe-" + std::to_string(i);
    auto start = std::chrono::steady_clock::now();
    v1::Response appended = client.call(append_request(stream, {{"", payload, {}}}));
    out.append.ms.push_back(since_ms(start));
    if (!appended.has_append()) {
      fail("append: " + (appended.has_error() ? appended.error().message() : std::string("no answer")));
      continue;
    }
    start = std::chrono::steady_clock::now();
    v1::Response read = client.call(read_request(stream, {{0, appended.append().first()}}, 1));
    out.read.ms.push_back(since_ms(start));
    if (!read.has_read() || read.read().partitions_size() != 1 || read.read().partitions(0).entries_size() != 1 ||
        read.read().partitions(0).entries(0).record().payload() != payload) {
      fail("read did not return the record just appended");
    }
  }
  return out;
}

double allowed_p99(double idle_before, double idle_after) {
  return 2 * std::max(idle_before, idle_after) + kNoiseAllowanceMs;
}

}  // namespace streamd::testing
