#include "client/connection.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "fake_broker.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

using std::chrono::milliseconds;
using testing::FakeBroker;

ConnectionOptions options_for(uint16_t port) {
  ConnectionOptions options;
  options.broker = {"127.0.0.1", port};
  options.request_timeout = milliseconds(5000);
  options.reconnect_backoff = {milliseconds(5), milliseconds(50)};
  return options;
}

// Answers Bounds with first = partition, next = partition + 100.
bool bounds_handler(const v1::Request& request, v1::Response* response) {
  if (!request.has_bounds()) return false;
  auto* b = response->mutable_bounds();
  b->set_partition(request.bounds().partition());
  b->set_first(static_cast<uint64_t>(request.bounds().partition()));
  b->set_next(static_cast<uint64_t>(request.bounds().partition()) + 100);
  return true;
}

v1::Request bounds_request(int32_t partition) {
  v1::Request request;
  request.mutable_bounds()->set_stream("s");
  request.mutable_bounds()->set_partition(partition);
  return request;
}

TEST_CASE("parse_broker_address") {
  auto a = parse_broker_address("127.0.0.1:7411");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 7411);
  auto v6 = parse_broker_address("[::1]:9");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  for (std::string_view bad : {"localhost", ":80", "host:", "host:0", "host:65536", "host:8x", "[::1:80"}) {
    INFO(std::string(bad));
    auto r = parse_broker_address(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().field("field") == "broker");
  }
}

TEST_CASE("says Hello, then answers a call") {
  FakeBroker broker(bounds_handler, 4096);
  Connection connection(options_for(broker.port()));
  v1::Request request = bounds_request(3);
  v1::Response response;
  REQUIRE(connection.call(request, &response).ok());
  CHECK(response.bounds().first() == 3);
  CHECK(response.bounds().next() == 103);
  CHECK(connection.broker_version() == "fake-1");
  CHECK(connection.max_frame_bytes() == 4096);
}

TEST_CASE("pipelined answers arriving in reverse order reach their own callers") {
  std::mutex mutex;
  std::vector<v1::Request> held;
  FakeBroker* broker_ptr = nullptr;
  FakeBroker broker([&](const v1::Request& request, v1::Response*) {
    std::vector<v1::Request> all;
    {
      std::lock_guard lock(mutex);
      held.push_back(request);
      if (held.size() < 5) return false;
      all.swap(held);
    }
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      v1::Response answer;
      answer.set_id(it->id());
      bounds_handler(*it, &answer);
      broker_ptr->send(answer);
    }
    return false;
  });
  broker_ptr = &broker;
  Connection connection(options_for(broker.port()));
  REQUIRE(connection.connect(milliseconds(2000)).ok());

  std::condition_variable cv;
  std::vector<int64_t> results(5, -1);
  int done = 0;
  for (int32_t p = 0; p < 5; ++p) {
    v1::Request request = bounds_request(p);
    connection.call_async(request, milliseconds(5000), [&, p](const Status& status, v1::Response& response) {
      std::lock_guard lock(mutex);
      results[static_cast<size_t>(p)] = status.ok() ? static_cast<int64_t>(response.bounds().first()) : -2;
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return done == 5; });
  CHECK(results == std::vector<int64_t>{0, 1, 2, 3, 4});
}

TEST_CASE("a broker error arrives as an Error with its code, name and fields") {
  FakeBroker broker([](const v1::Request& request, v1::Response* response) {
    auto* e = response->mutable_error();
    e->set_code(static_cast<uint32_t>(ErrorCode::kOffsetAhead));
    e->set_name("OFFSET_AHEAD");
    e->set_message("past the end");
    (*e->mutable_fields())["requested"] = std::to_string(request.trim().before());
    return true;
  });
  Connection connection(options_for(broker.port()));
  v1::Request request;
  request.mutable_trim()->set_before(42);
  Status status = connection.call(request, nullptr);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kOffsetAhead));
  CHECK(status.error().exit_code() == 65);
  CHECK(status.error().to_string() == "OFFSET_AHEAD: past the end (requested=42)");
}

TEST_CASE("a request past its deadline fails UNAVAILABLE and the next one reconnects") {
  FakeBroker broker([](const v1::Request& request, v1::Response* response) {
    if (request.bounds().partition() == 99) return false;  // never answered
    return bounds_handler(request, response);
  });
  Connection connection(options_for(broker.port()));
  v1::Request silent = bounds_request(99);
  Status status = connection.call(silent, nullptr, milliseconds(100));
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kUnavailable));
  CHECK(status.error().field("reason") == "timeout");

  v1::Request request = bounds_request(1);
  v1::Response response;
  Status again = connection.call(request, &response);
  INFO((again.ok() ? std::string("ok") : again.error().to_string()));
  REQUIRE(again.ok());
  CHECK(response.bounds().next() == 101);
  CHECK(broker.connections_accepted() == 2);
}

TEST_CASE("a broken socket fails what is outstanding, the next call reconnects") {
  FakeBroker broker([](const v1::Request& request, v1::Response* response) {
    if (request.bounds().partition() == 99) return false;
    return bounds_handler(request, response);
  });
  Connection connection(options_for(broker.port()));
  REQUIRE(connection.connect(milliseconds(2000)).ok());
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Status> outcome;
  v1::Request silent = bounds_request(99);
  connection.call_async(silent, milliseconds(10'000), [&](const Status& status, v1::Response&) {
    std::lock_guard lock(mutex);
    outcome = status;
    cv.notify_all();
  });
  broker.drop_connections();
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return outcome.has_value(); });
  }
  REQUIRE_FALSE(outcome->ok());
  CHECK(outcome->error().is(ErrorCode::kUnavailable));

  v1::Request request = bounds_request(2);
  REQUIRE(connection.call(request, nullptr).ok());
  CHECK(broker.connections_accepted() == 2);
}

TEST_CASE("calls retry the connection with backoff until the broker listens again") {
  FakeBroker broker(bounds_handler);
  Connection connection(options_for(broker.port()));
  REQUIRE(connection.connect(milliseconds(2000)).ok());
  broker.stop();
  v1::Request early = bounds_request(1);
  Status refused = connection.call(early, nullptr, milliseconds(200));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().is(ErrorCode::kUnavailable));
  CHECK(refused.error().exit_code() == 69);

  broker.start();
  v1::Request late = bounds_request(1);
  REQUIRE(connection.call(late, nullptr, milliseconds(5000)).ok());
}

TEST_CASE("nothing listening is UNAVAILABLE with the broker named") {
  uint16_t port;
  {
    FakeBroker gone(bounds_handler);
    port = gone.port();
  }
  Connection connection(options_for(port));
  v1::Request request = bounds_request(0);
  Status status = connection.call(request, nullptr, milliseconds(150));
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kUnavailable));
  CHECK(status.error().field("broker") == "127.0.0.1:" + std::to_string(port));
}

TEST_CASE("a Hello refusal is returned, not retried") {
  FakeBroker broker(bounds_handler);
  broker.refuse_hello(static_cast<uint32_t>(ErrorCode::kUnauthenticated), "UNAUTHENTICATED");
  Connection connection(options_for(broker.port()));
  v1::Request request = bounds_request(0);
  Status status = connection.call(request, nullptr, milliseconds(2000));
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kUnauthenticated));
  CHECK(broker.connections_accepted() == 1);
}

TEST_CASE("a request over the broker's frame limit is refused before it is sent") {
  FakeBroker broker(bounds_handler, 64);
  Connection connection(options_for(broker.port()));
  v1::Request request;
  request.mutable_append()->set_stream("s");
  request.mutable_append()->add_records()->set_payload(std::string(100, 'x'));
  Status status = connection.call(request, nullptr);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kFrameTooLarge));
  CHECK(status.error().field("max") == "64");
  v1::Request small = bounds_request(0);
  CHECK(connection.call(small, nullptr).ok());
}

}  // namespace
}  // namespace streamd::client

namespace streamd::client {
namespace {

TEST_CASE("a request pinned to a socket that is gone fails instead of riding a new one") {
  FakeBroker broker(bounds_handler);
  Connection connection(options_for(broker.port()));
  auto call_pinned = [&](uint64_t pin, uint64_t* sent_on) {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<Status> outcome;
    v1::Request request = bounds_request(1);
    connection.call_async(
        request, milliseconds(2000),
        [&](const Status& status, v1::Response&) {
          std::lock_guard lock(mutex);
          outcome = status;
          cv.notify_all();
        },
        pin, sent_on);
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return outcome.has_value(); });
    return *outcome;
  };
  uint64_t first = 0;
  REQUIRE(call_pinned(0, &first).ok());
  REQUIRE(first != 0);
  uint64_t again = 0;
  REQUIRE(call_pinned(first, &again).ok());
  CHECK(again == first);

  broker.drop_connections();
  v1::Request probe = bounds_request(0);
  while (connection.call(probe, nullptr).ok() && broker.connections_accepted() < 2) {
  }
  uint64_t stale = 0;
  Status status = call_pinned(first, &stale);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().is(ErrorCode::kUnavailable));
  CHECK(stale == 0);
}

TEST_CASE("connections sharing a reactor answer on its thread, one broken socket leaves the others be") {
  FakeBroker first_broker(bounds_handler);
  FakeBroker second_broker(bounds_handler);
  auto reactor = std::make_shared<Reactor>();
  ConnectionOptions first_options = options_for(first_broker.port());
  ConnectionOptions second_options = options_for(second_broker.port());
  first_options.reactor = second_options.reactor = reactor;
  Connection first(first_options);
  Connection second(second_options);

  auto answered_on = [](Connection& connection, int32_t partition) {
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<std::thread::id> thread;
    uint64_t first_offset = 0;
    v1::Request request = bounds_request(partition);
    connection.call_async(request, milliseconds(5000), [&](const Status& status, v1::Response& response) {
      std::lock_guard lock(mutex);
      first_offset = status.ok() ? response.bounds().first() : 999;
      thread = std::this_thread::get_id();
      cv.notify_all();
    });
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return thread.has_value(); });
    CHECK(first_offset == static_cast<uint64_t>(partition));
    return *thread;
  };
  const std::thread::id on_first = answered_on(first, 1);
  CHECK(answered_on(second, 2) == on_first);
  CHECK(on_first != std::this_thread::get_id());

  first_broker.drop_connections();
  v1::Request probe = bounds_request(3);
  while (first.call(probe, nullptr).ok() && first_broker.connections_accepted() < 2) {
  }
  REQUIRE(first.call(probe, nullptr).ok());
  CHECK(first_broker.connections_accepted() == 2);
  CHECK(answered_on(second, 4) == on_first);
  CHECK(second_broker.connections_accepted() == 1);
}

TEST_CASE("a request given in pieces goes out as one frame, larger than any socket buffer") {
  const std::string stream(3 << 20, 's');
  FakeBroker broker(
      [&](const v1::Request& request, v1::Response* response) {
        if (request.bounds().stream() != stream) return false;
        return bounds_handler(request, response);
      },
      8 << 20);
  Connection connection(options_for(broker.port()));
  v1::Request request = bounds_request(7);
  request.mutable_bounds()->set_stream(stream);
  const std::string whole = request.SerializeAsString();
  const std::string_view w = whole;
  const std::string_view pieces[] = {w.substr(0, 1), {}, w.substr(1, 1 << 20), w.substr(1 + (1 << 20))};
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Status> outcome;
  uint64_t first = 0;
  connection.call_async_encoded(pieces, milliseconds(5000), [&](const Status& status, v1::Response& response) {
    std::lock_guard lock(mutex);
    first = response.bounds().first();
    outcome = status;
    cv.notify_all();
  });
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return outcome.has_value(); });
  REQUIRE(outcome->ok());
  CHECK(first == 7);
}

}  // namespace
}  // namespace streamd::client
