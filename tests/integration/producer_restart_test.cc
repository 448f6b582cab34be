// The client library's idempotent Producer against a daemon killed with kill -9 and restarted while
// it sends: every record acknowledged is stored exactly once, each key's records in send order, and a
// record that failed is at most once (docs/SEMANTICS.md §11, docs/CLIENT.md §Producer).
#include <catch2/catch.hpp>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client/admin.h"
#include "client/producer.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kRecords = 20'000;
constexpr int kKeys = 40;
constexpr int kRestartPartitions = 3;
constexpr int kRestarts = 3;

// Every payload a partition holds, in offset order.
std::vector<std::string> payloads_of(uint16_t port, int32_t partition) {
  WireClient c(port);
  std::vector<std::string> out;
  uint64_t from = 0;
  for (;;) {
    v1::Response r = c.call(read_request("s", {{partition, from}}, 5000));
    REQUIRE(r.has_read());
    const auto& p = r.read().partitions(0);
    REQUIRE_FALSE(p.has_error());
    if (p.entries_size() == 0) return out;
    for (const auto& e : p.entries()) out.push_back(e.record().payload());
    from = p.next_from();
  }
}

TEST_CASE("an idempotent producer through kill -9 restarts: every acknowledged record exactly once, in order",
          "[client][idempotence]") {
  DaemonProcess daemon;
  daemon.keep_ports();
  REQUIRE(daemon.start());
  client::ConnectionOptions connection_options;
  connection_options.broker = {"127.0.0.1", daemon.port()};
  connection_options.reconnect_backoff = {10ms, 100ms};
  client::Connection connection(connection_options);
  client::Policy policy;
  policy.partitions = kRestartPartitions;
  REQUIRE(client::Admin(connection).create_stream("s", policy).ok());

  client::ProducerOptions options;
  options.batch_records = 50;
  options.max_in_flight = 5;
  options.linger = 2ms;
  options.delivery_timeout = 60s;
  auto producer = client::Producer::open(connection, "s", options);
  REQUIRE(producer.ok());

  std::mutex mutex;
  std::set<std::string> acknowledged;
  std::set<std::string> failed;
  // The records go out from a thread of their own while this one kills and restarts the daemon: a
  // daemon dies with the thread that started it (DaemonProcess::start), so this thread, which outlives
  // the checks, starts every one.
  std::thread sender([&] {
    for (int i = 0; i < kRecords; ++i) {
      const std::string payload = "r" + std::to_string(i);
      (*producer)->send(client::Record{"k" + std::to_string(i % kKeys), payload, {}},
                        [&, payload](const client::Result<client::Delivery>& d) {
                          std::lock_guard lock(mutex);
                          (d.ok() ? acknowledged : failed).insert(payload);
                        });
      if (i % 1000 == 0) std::this_thread::sleep_for(60ms);  // spread the sends over the restarts
    }
    (*producer)->flush();
  });
  int restarted = 0;
  for (int i = 0; i < kRestarts; ++i) {
    std::this_thread::sleep_for(300ms);
    daemon.kill9();
    std::this_thread::sleep_for(100ms);
    if (daemon.start(30s)) ++restarted;
  }
  sender.join();
  INFO(daemon.log());
  REQUIRE(restarted == kRestarts);

  std::map<std::string, int> seen;
  for (int32_t p = 0; p < kRestartPartitions; ++p) {
    std::map<std::string, int> last_of_key;
    for (const std::string& payload : payloads_of(daemon.port(), p)) {
      ++seen[payload];
      const int n = std::stoi(payload.substr(1));
      const std::string key = "k" + std::to_string(n % kKeys);
      if (last_of_key.count(key) > 0) CHECK(n > last_of_key[key]);
      last_of_key[key] = n;
    }
  }
  int duplicates = 0;
  for (const auto& [payload, count] : seen) duplicates += count - 1;
  CHECK(duplicates == 0);
  for (const std::string& payload : acknowledged) CHECK(seen.count(payload) == 1);
  // Each outage is far shorter than the delivery timeout: every record is delivered.
  CHECK(acknowledged.size() == kRecords);
  CHECK(failed.empty());
}

}  // namespace
}  // namespace streamd::testing
