// Every acknowledgement reaches its caller: producers on several connections, each with several
// batches in flight per partition over several partitions, against the real daemon. The on_batch
// ranges must tile every partition's offsets exactly (a batch answered without its on_batch leaves a
// gap, one answered twice an overlap), every record gets exactly one delivery callback at a distinct
// (partition, offset) that holds it when read back, and flush() returns only after all of that.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/admin.h"
#include "client/consumer.h"
#include "client/producer.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;
using client::Connection;
using client::ConnectionOptions;
using client::Record;

constexpr int kPartitions = 4;
constexpr int kConnections = 3;
constexpr int kRecordsPerConnection = 6000;

struct Ledger {
  std::mutex mutex;
  // (partition, first) → last, one per on_batch; a repeat of the same first is counted.
  std::map<std::pair<int32_t, uint64_t>, uint64_t> batches;
  int repeated_batches = 0;
  std::map<std::pair<int32_t, uint64_t>, std::string> delivered;  // (partition, offset) → payload
  int repeated_offsets = 0;
  int callbacks = 0;
  std::vector<std::string> errors;
};

TEST_CASE("every batch gets one on_batch and every record one delivery, under pipelining", "[client]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  ConnectionOptions connection_options;
  connection_options.broker = {"127.0.0.1", daemon.port()};
  {
    Connection setup(connection_options);
    client::Policy policy;
    policy.partitions = kPartitions;
    REQUIRE(client::Admin(setup).create_stream("acks", policy).ok());
  }

  Ledger ledger;
  std::vector<std::thread> producers;
  for (int c = 0; c < kConnections; ++c) {
    producers.emplace_back([&, c] {
      Connection connection(connection_options);
      client::ProducerOptions options;
      options.batch_records = 5;
      options.linger = 1ms;
      options.max_in_flight = 5;
      options.on_batch = [&](const client::AppendResult& r) {
        std::lock_guard lock(ledger.mutex);
        if (!ledger.batches.emplace(std::pair(r.partition, r.first), r.last).second) ++ledger.repeated_batches;
      };
      auto producer = client::Producer::open(connection, "acks", options);
      if (!producer.ok()) {
        std::lock_guard lock(ledger.mutex);
        ledger.errors.push_back(producer.error().to_string());
        return;
      }
      for (int i = 0; i < kRecordsPerConnection; ++i) {
        std::string payload = "c" + std::to_string(c) + "-r" + std::to_string(i);
        (*producer)->send(Record{"key-" + std::to_string(i % 13), payload, {}},
                          [&, payload](const client::Result<client::Delivery>& d) {
                            std::lock_guard lock(ledger.mutex);
                            ++ledger.callbacks;
                            if (!d.ok()) {
                              ledger.errors.push_back(d.error().to_string());
                              return;
                            }
                            if (!ledger.delivered.emplace(std::pair(d->partition, d->offset), payload).second)
                              ++ledger.repeated_offsets;
                          });
        // Pauses now and then let batches leave part full on their linger, so batch sizes vary.
        if (i % 997 == 0) std::this_thread::sleep_for(3ms);
      }
      (*producer)->flush();
      // flush() has returned: every record this producer sent has had its callback.
      std::lock_guard lock(ledger.mutex);
      int mine = 0;
      for (const auto& [at, payload] : ledger.delivered) mine += payload.rfind("c" + std::to_string(c) + "-", 0) == 0;
      if (mine != kRecordsPerConnection) {
        ledger.errors.push_back("connection " + std::to_string(c) + ": flush returned with " +
                                std::to_string(mine) + " deliveries");
      }
    });
  }
  for (std::thread& t : producers) t.join();

  CHECK(ledger.errors.empty());
  for (const std::string& e : ledger.errors) UNSCOPED_INFO(e);
  CHECK(ledger.callbacks == kConnections * kRecordsPerConnection);
  CHECK(ledger.repeated_offsets == 0);
  CHECK(ledger.repeated_batches == 0);
  CHECK(ledger.delivered.size() == size_t{kConnections} * kRecordsPerConnection);
  // Thousands of batches, so that a lost one has many chances to show.
  CHECK(ledger.batches.size() > 3000);

  Connection check(connection_options);
  client::Admin admin(check);
  for (int32_t p = 0; p < kPartitions; ++p) {
    auto bounds = admin.bounds("acks", p);
    REQUIRE(bounds.ok());
    // The on_batch ranges of partition p, in offset order, cover [first, next) with no gap or overlap.
    uint64_t expected = bounds->first;
    for (auto it = ledger.batches.lower_bound({p, 0}); it != ledger.batches.end() && it->first.first == p; ++it) {
      INFO("partition " << p << " batch " << it->first.second << ".." << it->second);
      CHECK(it->first.second == expected);
      CHECK(it->second >= it->first.second);
      expected = it->second + 1;
    }
    CHECK(expected == bounds->next);
  }

  // Every delivery names the offset that holds its record.
  client::ConsumerOptions all;
  all.wait = 0ms;
  all.max_records = 5000;
  auto consumer = client::Consumer::open(check, "acks", all);
  REQUIRE(consumer.ok());
  size_t read = 0;
  size_t mismatched = 0;
  for (int polls = 0; polls < 1000 && read < ledger.delivered.size(); ++polls) {
    auto entries = (*consumer)->poll();
    REQUIRE(entries.ok());
    if (entries->empty()) break;
    for (const client::Entry& e : *entries) {
      ++read;
      auto it = ledger.delivered.find({e.partition, e.offset});
      if (it == ledger.delivered.end() || it->second != e.record.payload) ++mismatched;
    }
  }
  CHECK(read == ledger.delivered.size());
  CHECK(mismatched == 0);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
