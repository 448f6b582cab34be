#include "server/http_api/history.h"

#include <catch2/catch.hpp>

#include "tests/http_api/memory_broker.h"

namespace streamd::http_api {
namespace {

TEST_CASE("rates are per second between samples, in a ring of an hour", "[history]") {
  Totals totals;
  History h([&] { return totals; });
  h.sample_rates(1000);  // the first sample is against zero totals at time 0
  totals.append_records = 500;
  totals.append_bytes = 50'000;
  totals.read_records = 100;
  h.sample_rates(2000);
  totals.append_records = 1500;
  h.sample_rates(4000);
  auto rates = h.rates(0);
  REQUIRE(rates.size() == 3);
  CHECK(rates[1].append_records == Approx(500));
  CHECK(rates[1].append_bytes == Approx(50'000));
  CHECK(rates[1].read_records == Approx(100));
  CHECK(rates[2].append_records == Approx(500));  // 1000 over two seconds
  CHECK(h.rates(2000).size() == 1);
  for (int i = 0; i < 5000; ++i) h.sample_rates(5000 + i * 1000);
  CHECK(h.rates(0).size() == History::kRateSamples);
}

TEST_CASE("lag is summed per group and in all, and a deleted stream's groups go", "[history]") {
  testing::MemoryBroker b;
  b.create("s", 2);
  for (int i = 0; i < 10; ++i) b.append_to("s", i % 2, "r");
  std::promise<Status> done;
  b.broker->commit("s", "g", PartitionId(0), Offset(2), [&](Status s) { done.set_value(s); });
  REQUIRE(done.get_future().get().ok());
  History h([] { return Totals{}; });
  h.sample_lag(*b.broker, 1000);
  auto g = h.group_lag("s", "g");
  REQUIRE(g.size() == 1);
  CHECK(g[0].lag == 3);  // partition 0: 5 - 2; partition 1 uncommitted counts no lag
  CHECK(h.total_lag(0).back().lag == 3);
  REQUIRE(b.broker->delete_stream("s").ok());
  h.sample_lag(*b.broker, 2000);
  CHECK(h.group_lag("s", "g").empty());
  CHECK(h.total_lag(0).back().lag == 0);
}

}  // namespace
}  // namespace streamd::http_api
