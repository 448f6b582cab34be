#include "client/producer.h"

#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>

#include "client/partitioner.h"
#include "fake_log.h"

namespace streamd::client {
namespace {

using std::chrono::milliseconds;
using testing::FakeLog;

ConnectionOptions producer_options(uint16_t port) {
  ConnectionOptions options;
  options.broker = {"127.0.0.1", port};
  options.reconnect_backoff = {milliseconds(1), milliseconds(20)};
  return options;
}

struct Deliveries {
  std::mutex mutex;
  std::map<std::string, Delivery> by_payload;
  std::vector<Error> errors;
  DeliveryCallback callback(const std::string& payload) {
    return [this, payload](const Result<Delivery>& d) {
      std::lock_guard lock(mutex);
      if (d.ok()) {
        by_payload[payload] = *d;
      } else {
        errors.push_back(d.error());
      }
    };
  }
};

TEST_CASE("keyed records land on partition_of and keep their order, deliveries name their offsets") {
  FakeLog log;
  log.create("s", 4);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 7;
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  CHECK((*producer)->partitions() == 4);
  Deliveries deliveries;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "key-" + std::to_string(i % 5);
    const std::string payload = std::to_string(i);
    (*producer)->send(Record{key, payload, {}}, deliveries.callback(payload));
  }
  (*producer)->flush();
  CHECK(deliveries.errors.empty());
  REQUIRE(deliveries.by_payload.size() == 200);
  std::map<std::string, int> last_seen;
  for (int32_t p = 0; p < 4; ++p) {
    auto records = log.records("s", p);
    for (size_t offset = 0; offset < records.size(); ++offset) {
      const auto& r = records[offset];
      CHECK(partition_of(r.key(), 4) == p);
      const int n = std::stoi(r.payload());
      if (last_seen.count(r.key())) CHECK(n > last_seen[r.key()]);
      last_seen[r.key()] = n;
      const Delivery& d = deliveries.by_payload.at(r.payload());
      CHECK(d.partition == p);
      CHECK(d.offset == offset);
    }
  }
  CHECK(log.appends() >= 200 / 7);
}

TEST_CASE("unkeyed records are spread over the partitions a batch at a time") {
  FakeLog log;
  log.create("s", 3);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 10;
  options.max_in_flight = 1;
  // Idempotent batches name their partition, the next one in turn; others are spread by the broker.
  options.idempotent = GENERATE(true, false);
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  for (int i = 0; i < 60; ++i) (*producer)->send(Record{"", std::to_string(i), {}});
  (*producer)->flush();
  CHECK(log.records("s", 0).size() == 20);
  CHECK(log.records("s", 1).size() == 20);
  CHECK(log.records("s", 2).size() == 20);
  CHECK((*producer)->failed_records() == 0);
}

TEST_CASE("idempotent unkeyed batches go to the partitions the broker's rotation takes") {
  // Brokers sharing a database each take their own partitions' unkeyed appends (docs/SCALING.md): a
  // producer choosing partitions itself follows what its broker's describe marks.
  FakeLog log;
  log.create("s", 4);
  log.set_rotation("s", {1, 3});
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 10;
  options.max_in_flight = 1;
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  for (int i = 0; i < 60; ++i) (*producer)->send(Record{"", std::to_string(i), {}});
  // Keyed records still go where their key does.
  for (int32_t p = 0; p < 4; ++p) {
    std::string key;
    for (int i = 0; key.empty() || partition_of(key, 4) != p; ++i) key = "k" + std::to_string(i);
    (*producer)->send(Record{key, "keyed", {}});
  }
  (*producer)->flush();
  CHECK(log.records("s", 0).size() == 1);
  CHECK(log.records("s", 1).size() == 31);
  CHECK(log.records("s", 2).size() == 1);
  CHECK(log.records("s", 3).size() == 31);
  CHECK((*producer)->failed_records() == 0);
}

TEST_CASE("a broken connection is survived: every record delivered, each key in order") {
  FakeLog log;
  log.create("s", 2);
  const bool applied = GENERATE(false, true);
  // Every 5th append kills the connection, before or after applying it.
  log.on_append([](uint64_t n) { return n % 5 == 0; }, applied);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 3;
  options.max_in_flight = 4;
  options.idempotent = false;
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  Deliveries deliveries;
  for (int i = 0; i < 300; ++i) {
    const std::string payload = std::to_string(i);
    (*producer)->send(Record{"k" + std::to_string(i % 3), payload, {}}, deliveries.callback(payload));
  }
  (*producer)->flush();
  CHECK(deliveries.errors.empty());
  CHECK(deliveries.by_payload.size() == 300);
  std::set<int> stored;
  for (int32_t p = 0; p < 2; ++p) {
    std::map<std::string, int> highest;
    for (const auto& r : log.records("s", p)) {
      const int n = std::stoi(r.payload());
      // A resent batch may repeat records already stored, but never puts a record of a key after a
      // later record of that key unless it was stored before too.
      if (highest.count(r.key()) && n < highest[r.key()]) CHECK(stored.count(n) == 1);
      stored.insert(n);
      highest[r.key()] = std::max(highest[r.key()], n);
    }
  }
  CHECK(stored.size() == 300);
  CHECK(log.broker().connections_accepted() > 1);
}

TEST_CASE("an idempotent producer's resends after lost answers are written once, each key in order") {
  FakeLog log;
  log.create("s", 3);
  const bool applied = GENERATE(false, true);
  // Every 5th append kills the connection, before or after applying it: resends of applied batches
  // must be answered as duplicates, with the offsets they were written at.
  log.on_append([](uint64_t n) { return n % 5 == 0; }, applied);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 3;
  options.max_in_flight = 5;
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  REQUIRE((*producer)->identity().has_value());
  Deliveries deliveries;
  for (int i = 0; i < 300; ++i) {
    const std::string payload = std::to_string(i);
    const std::string key = i % 4 == 3 ? std::string() : "k" + std::to_string(i % 4);
    (*producer)->send(Record{key, payload, {}}, deliveries.callback(payload));
  }
  (*producer)->flush();
  CHECK(deliveries.errors.empty());
  REQUIRE(deliveries.by_payload.size() == 300);
  std::set<int> stored;
  for (int32_t p = 0; p < 3; ++p) {
    std::map<std::string, int> highest;
    const auto records = log.records("s", p);
    for (size_t offset = 0; offset < records.size(); ++offset) {
      const auto& r = records[offset];
      const int n = std::stoi(r.payload());
      CHECK(stored.insert(n).second);  // never twice
      if (!r.key().empty()) {
        if (highest.count(r.key())) CHECK(n > highest[r.key()]);
        highest[r.key()] = n;
      }
      // Each delivery names where its record is, duplicates' answers included.
      const Delivery& d = deliveries.by_payload.at(r.payload());
      CHECK(d.partition == p);
      CHECK(d.offset == offset);
    }
  }
  CHECK(stored.size() == 300);
  CHECK(log.broker().connections_accepted() > 1);
  CHECK(log.init_producers() == std::make_pair(1, 0));
}

TEST_CASE("an idempotent producer numbers the batches after a refused one again, and nothing is lost") {
  FakeLog log;
  log.create("s", 1);
  // The 3rd and 7th appends are refused (as a full stream refuses): the batches pipelined behind each
  // are refused out of order by the sequence check, and must be sent again, renumbered.
  log.refuse_append([](uint64_t n) -> std::optional<ErrorCode> {
    if (n == 3 || n == 7) return ErrorCode::kStreamFull;
    return std::nullopt;
  });
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 2;
  options.max_in_flight = 5;
  options.linger = milliseconds(50);
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  Deliveries deliveries;
  for (int i = 0; i < 40; ++i) {
    const std::string payload = std::to_string(i);
    (*producer)->send(Record{"k", payload, {}}, deliveries.callback(payload));
  }
  (*producer)->flush();
  // Exactly the two refused batches failed, with the broker's error; no record saw the sequence check.
  REQUIRE(deliveries.errors.size() == 4);
  for (const Error& e : deliveries.errors) CHECK(e.is(ErrorCode::kStreamFull));
  const auto records = log.records("s", 0);
  CHECK(records.size() == 36);
  std::set<int> stored;
  int last = -1;
  for (const auto& r : records) {
    const int n = std::stoi(r.payload());
    CHECK(n > last);
    last = n;
    stored.insert(n);
  }
  CHECK(stored.size() == 36);
  CHECK(log.init_producers() == std::make_pair(1, 0));  // renumbered within the epoch
}

TEST_CASE("an idempotent producer takes the next epoch after a batch whose fate is unknown") {
  FakeLog log;
  log.create("s", 1);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 1;
  options.delivery_timeout = milliseconds(300);
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  REQUIRE((*producer)->identity()->epoch == 0);
  // The broker goes away long enough for a batch to exhaust its delivery timeout.
  log.broker().stop();
  Deliveries deliveries;
  (*producer)->send(Record{"k", "lost", {}}, deliveries.callback("lost"));
  (*producer)->flush();
  REQUIRE(deliveries.errors.size() == 1);
  CHECK(deliveries.errors[0].is(ErrorCode::kUnavailable));
  log.broker().start();
  for (int i = 0; i < 5; ++i) (*producer)->send(Record{"k", std::to_string(i), {}}, deliveries.callback(std::to_string(i)));
  (*producer)->flush();
  CHECK(deliveries.errors.size() == 1);
  CHECK(log.records("s", 0).size() == 5);
  CHECK(log.init_producers() == std::make_pair(2, 1));
  CHECK((*producer)->identity()->epoch == 1);
}

TEST_CASE("a refused batch fails its records with the broker's error") {
  FakeLog log;
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.partitions = 1;
  auto producer = Producer::open(connection, "missing", options);
  REQUIRE(producer.ok());
  Deliveries deliveries;
  (*producer)->send(Record{"k", "v", {}}, deliveries.callback("v"));
  (*producer)->flush();
  REQUIRE(deliveries.errors.size() == 1);
  CHECK(deliveries.errors[0].is(ErrorCode::kStreamNotFound));
  CHECK((*producer)->failed_records() == 1);
}

TEST_CASE("an idempotent producer keeps no more batches in flight than the broker recognises resends among") {
  FakeLog log;
  log.create("s", 1);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.max_in_flight = 6;
  auto refused = Producer::open(connection, "s", options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().is(ErrorCode::kStreamMisconfigured));
  CHECK(refused.error().field("field") == "max_in_flight");
  options.idempotent = false;  // at-least-once: any window
  CHECK(Producer::open(connection, "s", options).ok());
  options.idempotent = true;
  options.max_in_flight = 5;
  CHECK(Producer::open(connection, "s", options).ok());
}

}  // namespace
}  // namespace streamd::client

namespace streamd::client {
namespace {

TEST_CASE("batches stay under the broker's frame limit whatever batch_bytes says") {
  testing::FakeLog log(4096);
  log.create("s", 1);
  Connection connection(producer_options(log.port()));
  ProducerOptions options;
  options.batch_records = 1000;
  options.batch_bytes = 1 << 20;
  options.linger = std::chrono::milliseconds(50);
  auto producer = Producer::open(connection, "s", options);
  REQUIRE(producer.ok());
  Deliveries deliveries;
  for (int i = 0; i < 100; ++i) {
    const std::string payload = std::to_string(i) + std::string(200, 'p');
    (*producer)->send(Record{"", payload, {{"h", "v"}}}, deliveries.callback(payload));
  }
  (*producer)->flush();
  CHECK(deliveries.errors.empty());
  CHECK(log.records("s", 0).size() == 100);
  // 100 records of ~210 bytes cannot share one frame of 4 KiB.
  CHECK(log.appends() >= 6);
}

}  // namespace
}  // namespace streamd::client
