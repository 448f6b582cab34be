#include "server/metrics/metrics.h"

#include <catch2/catch.hpp>
#include <thread>

#include "tests/support/prometheus_text.h"

namespace streamd {
namespace {

TEST_CASE("counters, gauges and histograms render as Prometheus text", "[metrics]") {
  MetricsRegistry registry;
  registry.counter("streamd_requests_total", "Requests", {{"op", "append"}}).inc(3);
  registry.counter("streamd_requests_total", "Requests", {{"op", "read"}}).inc();
  registry.gauge("streamd_connections", "Open connections").set(2);
  auto& h = registry.histogram("streamd_sync_seconds", "Sync latency", {0.3, 1});
  h.observe(0.25);
  h.observe(0.5);
  h.observe(4);

  const std::string text = registry.render();
  CHECK(text ==
        "# HELP streamd_connections Open connections\n"
        "# TYPE streamd_connections gauge\n"
        "streamd_connections 2\n"
        "# HELP streamd_requests_total Requests\n"
        "# TYPE streamd_requests_total counter\n"
        "streamd_requests_total{op=\"append\"} 3\n"
        "streamd_requests_total{op=\"read\"} 1\n"
        "# HELP streamd_sync_seconds Sync latency\n"
        "# TYPE streamd_sync_seconds histogram\n"
        "streamd_sync_seconds_bucket{le=\"0.3\"} 1\n"
        "streamd_sync_seconds_bucket{le=\"1\"} 2\n"
        "streamd_sync_seconds_bucket{le=\"+Inf\"} 3\n"
        "streamd_sync_seconds_sum 4.75\n"
        "streamd_sync_seconds_count 3\n");
  auto parsed = testing::parse_prometheus_text(text);
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  CHECK(parsed.exposition->value("streamd_requests_total", {{"op", "append"}}) == 3);
}

TEST_CASE("the same name and labels return the same metric", "[metrics]") {
  MetricsRegistry registry;
  Counter& a = registry.counter("c_total", "help", {{"k", "v"}});
  Counter& b = registry.counter("c_total", "help", {{"k", "v"}});
  CHECK(&a == &b);
  CHECK(&a != &registry.counter("c_total", "help", {{"k", "w"}}));
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  MetricsRegistry registry;
  registry.gauge("g", "line one\nback\\slash", {{"stream", "a\"b\\c\nd"}}).set(1);
  const std::string text = registry.render();
  CHECK(text.find("# HELP g line one\\nback\\\\slash\n") != std::string::npos);
  CHECK(text.find("g{stream=\"a\\\"b\\\\c\\nd\"} 1\n") != std::string::npos);
  auto parsed = testing::parse_prometheus_text(text);
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  CHECK(parsed.exposition->samples.at(0).labels.at("stream") == "a\"b\\c\nd");
}

TEST_CASE("collectors add scrape-time samples in their own families", "[metrics]") {
  MetricsRegistry registry;
  registry.counter("a_total", "a").inc();
  registry.add_collector([](MetricsWriter& w) {
    w.gauge("streamd_partition_next_offset", "Next offset", {{"stream", "s"}, {"partition", "0"}}, 10);
    w.gauge("streamd_partition_next_offset", "Next offset", {{"stream", "s"}, {"partition", "1"}}, 12);
  });
  auto parsed = testing::parse_prometheus_text(registry.render());
  INFO(parsed.error);
  REQUIRE(parsed.exposition.has_value());
  CHECK(parsed.exposition->types.at("streamd_partition_next_offset") == "gauge");
  CHECK(parsed.exposition->value("streamd_partition_next_offset", {{"stream", "s"}, {"partition", "1"}}) ==
        12);
}

TEST_CASE("updates from many threads all count", "[metrics]") {
  MetricsRegistry registry;
  Counter& c = registry.counter("n_total", "n");
  Histogram& h = registry.histogram("h", "h", exponential_buckets(64));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(i % 100);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.value() == 40000);
  CHECK(h.count() == 40000);
  auto parsed = testing::parse_prometheus_text(registry.render());
  INFO(parsed.error);
  CHECK(parsed.exposition.has_value());
}

TEST_CASE("the test reader refuses malformed expositions", "[metrics]") {
  for (const char* bad :
       {"x 1\n",                                            // no TYPE
        "# TYPE x gauge\nx{a=\"1} 1\n",                     // unterminated label
        "# TYPE x gauge\nx 1 2 3\n",                        // trailing text
        "# TYPE x gauge\nx one\n",                          // bad value
        "# TYPE x gauge\n# TYPE y gauge\nx 1\ny 1\nx 2\n",  // not contiguous
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"}) {
    INFO(bad);
    CHECK_FALSE(testing::parse_prometheus_text(bad).exposition.has_value());
  }
}

}  // namespace
}  // namespace streamd
