// Pipelining: many requests in flight on one connection, answers matched by id, appends to one
// partition taking offsets in sending order; a waiting Read never delays an Append behind it.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

TEST_CASE("pipelined appends to one partition take offsets in sending order", "[pipelining]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("ordered", 1)).has_create_stream());

  constexpr int kAppends = 500;
  std::string burst;
  std::map<uint64_t, int> sequence_of;  // request id → sending position
  for (int i = 0; i < kAppends; ++i) {
    v1::Request request = append_request("ordered", {{"", "record-" + std::to_string(i), {}}});
    request.set_id(c.next_id());
    sequence_of[request.id()] = i;
    burst += frame_of(request);
  }
  // One write: the broker reads them back to back, with no answer in between.
  REQUIRE(c.socket().send_all(burst));

  std::map<int, uint64_t> offset_of;
  for (int i = 0; i < kAppends; ++i) {
    auto response = c.receive();
    REQUIRE(response.has_value());
    REQUIRE(response->has_append());
    REQUIRE(sequence_of.count(response->id()) == 1);
    offset_of[sequence_of[response->id()]] = response->append().first();
  }
  REQUIRE(offset_of.size() == kAppends);
  for (int i = 0; i < kAppends; ++i) CHECK(offset_of[i] == static_cast<uint64_t>(i));

  auto read = c.call(read_request("ordered", {{0, 0}}, kAppends));
  REQUIRE(read.has_read());
  REQUIRE(read.read().partitions(0).entries_size() == kAppends);
  for (int i = 0; i < kAppends; ++i) {
    CHECK(read.read().partitions(0).entries(i).record().payload() == "record-" + std::to_string(i));
  }
}

TEST_CASE("a waiting Read does not delay an Append on the same connection", "[pipelining]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("quiet", 1)).has_create_stream());
  REQUIRE(c.call(create_request("busy", 1)).has_create_stream());

  // The read would wait a minute on a stream nobody writes; the append sent behind it is answered
  // while it waits.
  const uint64_t read_id = c.send(read_request("quiet", {{0, 0}}, 10, 60'000));
  const uint64_t append_id = c.send(append_request("busy", {{"", "x", {}}}));
  auto first = c.receive();
  REQUIRE(first.has_value());
  CHECK(first->id() == append_id);
  CHECK(first->has_append());

  // An append to the quiet stream, on the same connection, then wakes the read.
  const uint64_t wake_id = c.send(append_request("quiet", {{"", "wake", {}}}));
  auto woken = c.wait_for(read_id);
  REQUIRE(woken.has_value());
  REQUIRE(woken->has_read());
  REQUIRE(woken->read().partitions(0).entries_size() == 1);
  CHECK(woken->read().partitions(0).entries(0).record().payload() == "wake");
  auto wake_answer = c.wait_for(wake_id);
  REQUIRE(wake_answer.has_value());
  CHECK(wake_answer->has_append());
}

TEST_CASE("answers carry their request's id whatever order they come back in", "[pipelining]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  std::map<uint64_t, std::string> expected;
  for (int i = 0; i < 50; ++i) {
    v1::Request request;
    if (i % 2 == 0) {
      request = append_request("mixed", {{"", std::to_string(i), {}}});
      expected[c.send(request)] = "append";
    } else {
      request.mutable_health();
      expected[c.send(request)] = "health";
    }
  }
  for (int i = 0; i < 50; ++i) {
    auto response = c.receive();
    REQUIRE(response.has_value());
    REQUIRE(expected.count(response->id()) == 1);
    CHECK((expected[response->id()] == "append" ? response->has_append() : response->has_health()));
    expected.erase(response->id());
  }
  CHECK(expected.empty());
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

TEST_CASE("past max_inflight_bytes the broker pauses reading, then answers everything", "[pipelining]") {
  RunningDaemon r({"--limits.max-inflight-bytes", "4KiB"});
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("budget", 1)).has_create_stream());
  constexpr int kAppends = 300;  // ~150 KiB of requests against a 4 KiB budget
  std::string burst;
  for (int i = 0; i < kAppends; ++i) {
    v1::Request request = append_request("budget", {{"", std::string(500, 'p') + std::to_string(i), {}}});
    request.set_id(static_cast<uint64_t>(i + 1000));
    burst += frame_of(request);
  }
  REQUIRE(c.socket().send_all(burst));
  for (int i = 0; i < kAppends; ++i) {
    auto response = c.receive();
    REQUIRE(response.has_value());
    REQUIRE(response->has_append());
    CHECK(response->append().first() == response->id() - 1000);
  }
}

TEST_CASE("answers past what the socket holds reach a client that reads late, whole and each once",
          "[pipelining]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("late", 1)).has_create_stream());
  constexpr int kRecords = 16;
  std::vector<TestRecord> records;
  for (int i = 0; i < kRecords; ++i) records.push_back({"", std::string(64 << 10, static_cast<char>('a' + i)), {}});
  REQUIRE(c.call(append_request("late", records)).has_append());
  // 32 answers of 1 MiB each: more than the socket buffers hold, so the broker writes part of an
  // answer, queues the rest and carries on as the client reads.
  constexpr int kReads = 32;
  std::string burst;
  for (int i = 0; i < kReads; ++i) {
    v1::Request request = read_request("late", {{0, 0}});
    request.set_id(static_cast<uint64_t>(i + 1));
    burst += frame_of(request);
  }
  REQUIRE(c.socket().send_all(burst));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::set<uint64_t> ids;
  for (int i = 0; i < kReads; ++i) {
    auto response = c.receive();
    REQUIRE(response.has_value());
    REQUIRE(response->has_read());
    ids.insert(response->id());
    const auto& entries = response->read().partitions(0).entries();
    REQUIRE(entries.size() == kRecords);
    for (int j = 0; j < kRecords; ++j) {
      CHECK(entries[j].record().payload() == records[static_cast<size_t>(j)].payload);
    }
  }
  CHECK(ids.size() == kReads);
}

}  // namespace
}  // namespace streamd::testing
