// The client library against the real daemon: the Subscriber parks a failing partition while the
// others advance, and a Producer and a Consumer ride out a broker killed and restarted under them.
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client/admin.h"
#include "client/consumer.h"
#include "client/partitioner.h"
#include "client/producer.h"
#include "client/subscriber.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::Connection;
using client::ConnectionOptions;
using client::Entry;
using client::Record;

ConnectionOptions options_for(uint16_t port) {
  ConnectionOptions options;
  options.broker = {"127.0.0.1", port};
  options.request_timeout = 5s;
  return options;
}

TEST_CASE("the subscriber parks a failing partition while the others advance", "[client]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  Connection connection(options_for(daemon.port()));
  Admin admin(connection);
  client::Policy policy;
  policy.partitions = 3;
  REQUIRE(admin.create_stream("jobs", policy).ok());
  // Partition 2 gets its records first; 0 and 1 get theirs only once 2 has parked.
  auto fill = [&](int32_t partition) {
    std::string key;
    for (int i = 0; key.empty() || client::partition_of(key, 3) != partition; ++i)
      key = "k" + std::to_string(i);
    for (int i = 0; i < 10; ++i) REQUIRE(admin.append("jobs", {Record{key, std::to_string(i), {}}}).ok());
  };
  fill(2);

  std::map<int32_t, std::vector<uint64_t>> handled;
  int failures = 0;
  size_t parked_progress_when_others_done = 0;
  std::unique_ptr<client::Subscriber> subscriber;
  client::SubscriberOptions options;
  options.group = std::string("workers");
  options.handler_idempotent = true;
  options.start_when_unknown = client::StartPosition::earliest();
  options.wait = 50ms;
  options.retry_initial = 10ms;
  options.retry_max = 40ms;
  options.handler = [&](const Entry& e) {
    const bool others_done = handled[0].size() == 10 && handled[1].size() == 10;
    // Partition 2's record 3 fails at least twice, and for as long as the others are not done.
    if (e.partition == 2 && e.offset == 3 && (failures < 2 || !others_done)) {
      ++failures;
      return false;
    }
    handled[e.partition].push_back(e.offset);
    if (e.partition != 2 && handled[0].size() == 10 && handled[1].size() == 10) {
      parked_progress_when_others_done = handled[2].size();
    }
    if (handled[0].size() + handled[1].size() + handled[2].size() == 30) subscriber->stop();
    return true;
  };
  bool filled = false;
  options.on_park = [&](int32_t partition, uint64_t offset, int) {
    CHECK(partition == 2);
    CHECK(offset == 3);
    if (!filled) {
      filled = true;
      fill(0);
      fill(1);
    }
  };
  auto created = client::Subscriber::create(connection, "jobs", options);
  REQUIRE(created.ok());
  subscriber = std::move(*created);
  REQUIRE(subscriber->run().ok());

  CHECK(failures >= 2);
  // The other partitions finished while partition 2 was parked at its failing record.
  CHECK(parked_progress_when_others_done == 3);
  std::vector<uint64_t> all_ten{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int32_t p = 0; p < 3; ++p) {
    CHECK(handled[p] == all_ten);
    CHECK(admin.committed("jobs", "workers", p).value() == 10);
  }
  CHECK(daemon.stop() == 0);
}

TEST_CASE("a producer and a consumer survive the broker's kill and restart", "[client]") {
  const uint16_t port = free_port();
  DaemonProcess daemon({"--listen", "127.0.0.1:" + std::to_string(port)});
  REQUIRE(daemon.start());
  {
    Connection setup(options_for(port));
    client::Policy policy;
    policy.partitions = 2;
    REQUIRE(Admin(setup).create_stream("r", policy).ok());
  }

  // The consumer follows the stream from another connection the whole time.
  std::atomic<bool> stop_reading{false};
  std::atomic<size_t> read_count{0};  // what the waiting below may look at while the reader runs
  std::map<int32_t, std::vector<uint64_t>> read_offsets;
  std::vector<std::string> read_errors;
  std::thread reader([&] {
    Connection connection(options_for(port));
    client::ConsumerOptions options;
    options.wait = 100ms;
    options.retry_for = 30s;
    auto consumer = client::Consumer::open(connection, "r", options);
    if (!consumer.ok()) {
      read_errors.push_back(consumer.error().to_string());
      return;
    }
    while (!stop_reading) {
      auto entries = (*consumer)->poll();
      if (!entries.ok()) {
        read_errors.push_back(entries.error().to_string());
        continue;
      }
      for (const Entry& e : *entries) read_offsets[e.partition].push_back(e.offset);
      read_count += entries->size();
    }
  });

  Connection connection(options_for(port));
  client::ProducerOptions options;
  options.batch_records = 20;
  options.linger = 2ms;
  options.delivery_timeout = 60s;
  auto producer = client::Producer::open(connection, "r", options);
  REQUIRE(producer.ok());
  std::mutex mutex;
  std::map<std::string, client::Delivery> acknowledged;
  std::vector<std::string> errors;
  auto send = [&](int i) {
    const std::string payload = std::to_string(i);
    (*producer)->send(Record{"key-" + std::to_string(i % 7), payload, {}},
                      [&, payload](const client::Result<client::Delivery>& d) {
                        std::lock_guard lock(mutex);
                        if (d.ok()) {
                          acknowledged[payload] = *d;
                        } else {
                          errors.push_back(d.error().to_string());
                        }
                      });
  };
  for (int i = 0; i < 1000; ++i) send(i);
  (*producer)->flush();
  daemon.kill9();
  for (int i = 1000; i < 1500; ++i) send(i);  // queued while the broker is down
  REQUIRE(daemon.start());
  for (int i = 1500; i < 2000; ++i) send(i);
  (*producer)->flush();
  CHECK(errors.empty());
  CHECK(acknowledged.size() == 2000);

  // Every acknowledged record is stored at the offset it was acknowledged with; offsets are unique.
  Connection check(options_for(port));
  client::ConsumerOptions all;
  all.wait = 0ms;
  all.max_records = 5000;
  auto consumer = client::Consumer::open(check, "r", all);
  REQUIRE(consumer.ok());
  std::map<std::pair<int32_t, uint64_t>, std::string> stored;
  for (int polls = 0; polls < 100; ++polls) {
    auto entries = (*consumer)->poll();
    REQUIRE(entries.ok());
    if (entries->empty()) break;
    for (const Entry& e : *entries)
      CHECK(stored.emplace(std::pair(e.partition, e.offset), e.record.payload).second);
  }
  for (const auto& [payload, d] : acknowledged) {
    auto it = stored.find({d.partition, d.offset});
    REQUIRE(it != stored.end());
    CHECK(it->second == payload);
  }
  // The follower saw each offset once, in order, with no gap, across the restart.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (read_count < stored.size() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  stop_reading = true;
  reader.join();
  for (int32_t p = 0; p < 2; ++p) {
    const auto& offsets = read_offsets[p];
    for (size_t i = 0; i < offsets.size(); ++i) CHECK(offsets[i] == i);
  }
  CHECK(read_offsets[0].size() + read_offsets[1].size() == stored.size());
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
