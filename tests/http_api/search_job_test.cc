#include "server/http_api/search_job.h"

#include <catch2/catch.hpp>
#include <thread>

#include "tests/http_api/memory_broker.h"

namespace streamd::http_api {
namespace {

using testing::MemoryBroker;

SearchProgress run(MemoryBroker& b, SearchSpec spec) {
  ThreadPool workers(1);
  auto d = b.broker->describe_stream(spec.stream);
  REQUIRE(d.ok());
  Cursor first;
  uint64_t total = 0;
  for (const auto& p : d->partitions) {
    first[p.partition.value] = p.bounds.first.value;
    if (spec.start.find(p.partition.value) == spec.start.end()) {
      spec.start[p.partition.value] = spec.order == PageOrder::kNewest ? p.bounds.next.value : p.bounds.first.value;
    }
    total += p.bounds.next.value - p.bounds.first.value;
  }
  auto job = std::make_shared<SearchJob>(*b.broker, workers, spec, first, total);
  job->start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!job->finished() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(job->finished());
  return job->progress();
}

TEST_CASE("a search finds its text in keys, payloads and headers, newest first", "[search]") {
  MemoryBroker b;
  b.create("s", 2);
  for (int i = 0; i < 3000; ++i) {
    b.clock.advance(std::chrono::microseconds(1));
    if (i == 100) {
      b.append("s", "needle-key", "x");
    } else if (i == 2000) {
      b.append("s", "", "some NEEDLE here");
    } else if (i == 2500) {
      b.append("s", "", "y", {{"trace", "a-needle-b"}});
    } else {
      b.append("s", "", "haystack " + std::to_string(i));
    }
  }
  SearchSpec spec;
  spec.stream = "s";
  spec.query = "needle";
  auto p = run(b, spec);
  CHECK(p.stopped_by == "end");
  CHECK(p.scanned == 3000);
  REQUIRE(p.matches.size() == 2);  // case-sensitive: NEEDLE is not needle
  CHECK(p.matches[0].record.headers.at(0).second == "a-needle-b");
  CHECK(p.matches[1].record.key == "needle-key");

  spec.ignore_case = true;
  CHECK(run(b, spec).matches.size() == 3);
  spec.in_headers = false;
  spec.in_key = false;
  CHECK(run(b, spec).matches.size() == 1);
}

TEST_CASE("a search stops at its budgets and says which", "[search]") {
  MemoryBroker b;
  b.create("s", 1);
  for (int i = 0; i < 5000; ++i) b.append("s", "", i % 10 == 0 ? "hit" : "miss");
  SearchSpec spec;
  spec.stream = "s";
  spec.query = "hit";
  spec.max_records = 1234;
  spec.max_matches = 1000;
  auto p = run(b, spec);
  CHECK(p.stopped_by == "max_records");
  CHECK(p.scanned == 1234);
  CHECK(p.resume.at(0) == 5000 - 1234);  // newest-first: it goes on below where it stopped
  spec.max_records = 10'000;
  spec.max_matches = 7;
  auto m = run(b, spec);
  CHECK(m.stopped_by == "max_matches");
  CHECK(m.matches.size() == 7);
  // Each slice stays within its budget (a loose bound: the machine may be busy).
  CHECK(m.longest_slice_us < 250'000);
}

TEST_CASE("an oldest-first search scans forward from where it is told", "[search]") {
  MemoryBroker b;
  b.create("s", 1);
  for (int i = 0; i < 100; ++i) b.append("s", "", "r" + std::to_string(i));
  SearchSpec spec{.stream = "s", .query = "r9", .order = PageOrder::kOldest, .start = {{0, 50}}};
  auto p = run(b, spec);
  CHECK(p.scanned == 50);
  REQUIRE(p.matches.size() == 10);  // r90..r99
  CHECK(p.matches.front().offset == Offset(90));
  CHECK(SearchJob::matches(spec, "", "xr9x", {}));
  CHECK(SearchJob::matches(spec, "r9", "", {}));
  spec.in_key = false;
  CHECK_FALSE(SearchJob::matches(spec, "r9", "", {}));
}

}  // namespace
}  // namespace streamd::http_api
