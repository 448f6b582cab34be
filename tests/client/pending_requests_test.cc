#include "client/pending_requests.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "client/backoff.h"
#include "streamd.pb.h"

using namespace streamd::client;
using std::chrono::milliseconds;

namespace {

// A request that records, into `log`, its name and the reason of the error it failed with.
PendingRequest named(std::vector<std::string>& log, std::string name, PendingRequest::Clock::time_point deadline) {
  PendingRequest request;
  request.deadline = deadline;
  request.done = [&log, name](const Status& status, streamd::v1::Response&) {
    log.push_back(name + ":" + (status.ok() ? "ok" : status.error().field("reason")));
  };
  return request;
}

const Error kLost(ErrorCode::kUnavailable, {{"reason", "lost"}});

}  // namespace

TEST_CASE("pending requests are taken by id once, and ids are never reused", "[client][pending]") {
  std::vector<std::string> log;
  PendingRequests table;
  const auto now = PendingRequest::Clock::now();
  const uint64_t a = table.next_id();
  const uint64_t b = table.next_id();
  CHECK(b > a);
  table.add(a, named(log, "a", now + milliseconds(10)));
  table.add(b, named(log, "b", now + milliseconds(5)));
  auto taken = table.take(b);
  REQUIRE(taken.has_value());
  taken->fail(kLost);
  CHECK_FALSE(table.take(b).has_value());  // a second answer with the same id finds nothing
  CHECK_FALSE(table.take(99).has_value());
  // The answered request's deadline went with it: only a's remains.
  CHECK(table.take_expired(now + milliseconds(7)).empty());
  CHECK(table.take_expired(now + milliseconds(10)).size() == 1);
  CHECK(log == std::vector<std::string>{"b:lost"});
}

TEST_CASE("expired requests come out earliest deadline first, the rest stay", "[client][pending]") {
  std::vector<std::string> log;
  PendingRequests table;
  const auto now = PendingRequest::Clock::now();
  table.add(table.next_id(), named(log, "late", now + milliseconds(30)));
  table.add(table.next_id(), named(log, "early", now + milliseconds(10)));
  table.add(table.next_id(), named(log, "middle", now + milliseconds(20)));
  for (PendingRequest& r : table.take_expired(now + milliseconds(20))) r.fail(kLost);
  CHECK(log == std::vector<std::string>{"early:lost", "middle:lost"});
  for (PendingRequest& r : table.take_all()) r.fail(kLost);
  CHECK(log.back() == "late:lost");
  CHECK(table.take_all().empty());
}

TEST_CASE("take_all hands requests back in the order they were sent", "[client][pending]") {
  std::vector<std::string> log;
  PendingRequests table;
  const auto now = PendingRequest::Clock::now();
  // Deadlines in the reverse order, so that id order is not deadline order.
  table.add(table.next_id(), named(log, "1", now + milliseconds(30)));
  table.add(table.next_id(), named(log, "2", now + milliseconds(20)));
  table.add(table.next_id(), named(log, "3", now + milliseconds(10)));
  for (PendingRequest& r : table.take_all()) r.fail(kLost);
  CHECK(log == std::vector<std::string>{"1:lost", "2:lost", "3:lost"});
  CHECK(table.take_expired(now + milliseconds(1000)).empty());
}

TEST_CASE("a raw request fails with an empty body", "[client][pending]") {
  PendingRequest request;
  bool called = false;
  request.raw = [&](const Status& status, std::string_view body) {
    called = true;
    CHECK_FALSE(status.ok());
    CHECK(body.empty());
  };
  request.fail(kLost);
  CHECK(called);
}

TEST_CASE("Backoff doubles from initial up to max", "[client][backoff]") {
  const Backoff backoff{milliseconds(20), milliseconds(1000)};
  CHECK(backoff.delay(0) == milliseconds(20));
  CHECK(backoff.delay(1) == milliseconds(20));
  CHECK(backoff.delay(2) == milliseconds(40));
  CHECK(backoff.delay(6) == milliseconds(640));
  CHECK(backoff.delay(7) == milliseconds(1000));
  CHECK(backoff.delay(1'000'000) == milliseconds(1000));
}
