#include "client/subscriber.h"

#include <catch2/catch.hpp>
#include <map>
#include <stdexcept>
#include <thread>

#include "client/admin.h"
#include "fake_log.h"

namespace streamd::client {
namespace {

using std::chrono::milliseconds;
using testing::FakeLog;

SubscriberOptions valid_options() {
  SubscriberOptions options;
  options.group = std::string("g");
  options.handler = [](const Entry&) { return true; };
  options.handler_idempotent = true;
  options.start_when_unknown = StartPosition::earliest();
  return options;
}

TEST_CASE("a subscriber without group, handler, idempotence or start position is refused") {
  const ConnectionOptions defaults;
  Connection connection(defaults);
  struct Case {
    const char* field;
    std::function<void(SubscriberOptions&)> spoil;
  };
  for (const Case& c :
       {Case{"group", [](SubscriberOptions& o) { o.group.clear(); }},
        Case{"handler", [](SubscriberOptions& o) { o.handler = nullptr; }},
        Case{"handler_idempotent", [](SubscriberOptions& o) { o.handler_idempotent = false; }},
        Case{"start_when_unknown", [](SubscriberOptions& o) { o.start_when_unknown.reset(); }}}) {
    SubscriberOptions options = valid_options();
    c.spoil(options);
    auto subscriber = Subscriber::create(connection, "s", options);
    INFO(c.field);
    REQUIRE_FALSE(subscriber.ok());
    CHECK(subscriber.error().is(ErrorCode::kSubscriberMisconfigured));
    CHECK(subscriber.error().exit_code() == 78);
    CHECK(subscriber.error().field("field") == c.field);
  }
  CHECK(Subscriber::create(connection, "s", valid_options()).ok());
}

TEST_CASE("a failing record parks its partition, is retried and never skipped, while others advance") {
  FakeLog log;
  log.create("s", 2);
  ConnectionOptions connection_options;
  connection_options.broker = {"127.0.0.1", log.port()};
  Connection connection(connection_options);
  Admin admin(connection);
  for (int i = 0; i < 10; ++i) {
    REQUIRE(admin.append("s", {Record{"", std::to_string(i), {}}}).ok());  // 5 per partition
  }

  std::map<int32_t, std::vector<uint64_t>> handled;
  int failures_left = 3;
  std::vector<std::pair<uint64_t, int>> parks;
  std::unique_ptr<Subscriber>* self = nullptr;
  SubscriberOptions options = valid_options();
  options.wait = milliseconds(10);
  options.retry_initial = milliseconds(5);
  options.retry_max = milliseconds(20);
  options.handler = [&](const Entry& e) {
    if (e.partition == 1 && e.offset == 2 && failures_left > 0) {
      --failures_left;
      // While partition 1 is parked, partition 0 must already have been handled to its end.
      if (failures_left == 0) CHECK(handled[0].size() == 5);
      if (failures_left == 1) throw std::runtime_error("handler threw");
      return false;
    }
    handled[e.partition].push_back(e.offset);
    if (handled[0].size() == 5 && handled[1].size() == 5) (*self)->stop();
    return true;
  };
  options.on_park = [&](int32_t partition, uint64_t offset, int failures) {
    CHECK(partition == 1);
    parks.emplace_back(offset, failures);
  };
  auto subscriber = Subscriber::create(connection, "s", options);
  REQUIRE(subscriber.ok());
  self = &*subscriber;
  REQUIRE((*subscriber)->run().ok());

  CHECK(handled[0] == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(handled[1] == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(parks == std::vector<std::pair<uint64_t, int>>{{2, 1}, {2, 2}, {2, 3}});
  CHECK(admin.committed("s", "g", 0).value() == 5);
  CHECK(admin.committed("s", "g", 1).value() == 5);
}

TEST_CASE("a subscriber resumes at the group's commit, not at start_when_unknown") {
  FakeLog log;
  log.create("s", 1);
  ConnectionOptions connection_options;
  connection_options.broker = {"127.0.0.1", log.port()};
  Connection connection(connection_options);
  Admin admin(connection);
  for (int i = 0; i < 4; ++i) REQUIRE(admin.append("s", {Record{"", std::to_string(i), {}}}).ok());
  REQUIRE(admin.commit("s", "g", 0, 2).ok());
  std::vector<uint64_t> seen;
  std::unique_ptr<Subscriber>* self = nullptr;
  SubscriberOptions options = valid_options();
  options.wait = milliseconds(10);
  options.handler = [&](const Entry& e) {
    seen.push_back(e.offset);
    if (e.offset == 3) (*self)->stop();
    return true;
  };
  auto subscriber = Subscriber::create(connection, "s", options);
  REQUIRE(subscriber.ok());
  self = &*subscriber;
  REQUIRE((*subscriber)->run().ok());
  CHECK(seen == std::vector<uint64_t>{2, 3});
  CHECK(admin.committed("s", "g", 0).value() == 4);
}

}  // namespace
}  // namespace streamd::client
