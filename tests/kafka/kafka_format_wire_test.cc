// The Kafka listener over raw sockets, on what the stored batch format carries: producer timestamps and
// nulls back exactly at every Fetch version, the topic's message.timestamp.type, ListOffsets by time (and
// -1 past the last record), KIP-74's limits on what one Fetch answers, and a data directory of version 1
// batches read as it always was.
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/codec.h"
#include "server/kafka/record_batch.h"
#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/stream_meta.h"
#include "tests/broker/manual_scheduler.h"
#include "tests/kafka/batch_helpers.h"
#include "tests/kafka/fetch_wire.h"
#include "tests/kafka/wire_helpers.h"
#include "tests/support/v1_batch.h"

namespace streamd::kafka {
namespace {

using streamd::testing::DaemonProcess;
using streamd::testing::TestSocket;
using testing::create_topic;
using testing::AnsweredBatch;
using testing::exact_producer_batch;
using testing::ExactRecord;
using testing::fetch;
using testing::frame;
using testing::KafkaDaemon;
using testing::list_offset;
using testing::produce_body;
using testing::produce_result;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void produce(uint16_t port, int16_t version, const std::string& topic, int32_t partition,
             const std::string& set) {
  TestSocket s(port);
  REQUIRE(s.send_all(frame(0, version, 3, produce_body(topic, partition, set))));
  auto answer = s.read_frame();
  REQUIRE(answer);
  CHECK(produce_result(*answer).first == 0);
}

// CreateTopics v0 of one topic with `partitions` and one config.
void create_topic_with(uint16_t port, const std::string& topic, int32_t partitions, const std::string& config,
                       const std::string& value) {
  std::string b;
  Writer w(b);
  w.array_count(1);
  w.string(topic);
  w.i32(partitions);
  w.i16(1);
  w.array_count(0);
  w.array_count(1);
  w.string(config);
  w.nullable_string(value);
  w.i32(10000);
  TestSocket s(port);
  REQUIRE(s.send_all(frame(19, 0, 4, b)));
  auto answer = s.read_frame();
  REQUIRE(answer);
  Reader r(*answer);
  r.i32();
  REQUIRE(r.count() == 1);
  r.string();
  CHECK(r.i16() == 0);
}

const std::vector<ExactRecord> kExact = {
    {"k", std::nullopt, {}, 0},                      // a tombstone
    {"k", "", {{"h", std::nullopt}, {"e", ""}}, 7},  // an empty value, a null and an empty header
    {std::nullopt, "v", {}, -20},                    // no key, an earlier time
    {"", std::nullopt, {}, 3},                       // an empty key
};

void check_exact(const std::vector<KafkaRecord>& records, int64_t base) {
  REQUIRE(records.size() == 4);
  CHECK(records[0].key == std::optional<std::string_view>("k"));
  CHECK_FALSE(records[0].value.has_value());
  CHECK(records[1].value == std::optional<std::string_view>(""));
  REQUIRE(records[1].headers.size() == 2);
  CHECK(records[1].headers[0].value_null);
  CHECK_FALSE(records[1].headers[1].value_null);
  CHECK(records[1].headers[1].value.empty());
  CHECK_FALSE(records[2].key.has_value());
  CHECK(records[2].value == std::optional<std::string_view>("v"));
  CHECK(records[3].key == std::optional<std::string_view>(""));
  CHECK_FALSE(records[3].value.has_value());
  CHECK(records[0].timestamp == base);
  CHECK(records[1].timestamp == base + 7);
  CHECK(records[2].timestamp == base - 20);
  CHECK(records[3].timestamp == base + 3);
}

TEST_CASE("kafka: producer timestamps and nulls come back exactly at every Fetch version") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "exact");
  const int64_t base = 1'600'000'000'000;
  produce(d.port(), 3, "exact", 0, exact_producer_batch(kExact, base));
  produce(d.port(), 7, "exact", 0, exact_producer_batch(kExact, base + 1000, Compression::kZstd));
  for (int16_t version : {int16_t{4}, int16_t{7}, int16_t{11}}) {
    INFO("Fetch v" << version);
    std::deque<std::string> arena;
    auto parts = fetch(d.port(), version, "exact", {{0, 0}}, arena);
    REQUIRE(parts.size() == 1);
    REQUIRE(parts[0].batches.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      const AnsweredBatch& b = parts[0].batches[i];
      CHECK(b.base_offset == static_cast<int64_t>(4 * i));
      CHECK((b.attributes & batch_v2::kLogAppendTime) == 0);  // CreateTime, the default
      CHECK(b.base_timestamp == base + 1000 * static_cast<int64_t>(i));
      CHECK(b.max_timestamp == base + 1000 * static_cast<int64_t>(i) + 7);
      check_exact(b.records, base + 1000 * static_cast<int64_t>(i));
    }
  }
}

TEST_CASE("kafka: a LogAppendTime topic answers the append instant, and looks times up by it") {
  KafkaDaemon d;
  create_topic_with(d.port(), "appended", 1, "message.timestamp.type", "LogAppendTime");
  const int64_t before = now_ms();
  produce(d.port(), 3, "appended", 0, exact_producer_batch(kExact, 1'000));
  const int64_t after = now_ms();
  std::deque<std::string> arena;
  auto parts = fetch(d.port(), 11, "appended", {{0, 0}}, arena);
  REQUIRE(parts[0].batches.size() == 1);
  const AnsweredBatch& b = parts[0].batches[0];
  CHECK((b.attributes & batch_v2::kLogAppendTime) != 0);
  CHECK(b.base_timestamp == b.max_timestamp);
  CHECK(b.base_timestamp >= before);
  CHECK(b.base_timestamp <= after);
  REQUIRE(b.records.size() == 4);
  CHECK_FALSE(b.records[0].value.has_value());  // nulls are kept whatever the timestamp type
  // By the append instant: the producer's times (1 s after the epoch) mean nothing here.
  CHECK(list_offset(d.port(), 1, "appended", 1'000) == std::pair<int64_t, int64_t>{0, b.base_timestamp});
  CHECK(list_offset(d.port(), 1, "appended", b.base_timestamp) ==
        std::pair<int64_t, int64_t>{0, b.base_timestamp});
  CHECK(list_offset(d.port(), 2, "appended", b.base_timestamp + 1) == std::pair<int64_t, int64_t>{-1, -1});
}

TEST_CASE(
    "kafka: ListOffsets by create time answers the first record at or after the time, -1 past them all") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic(s, "times");
  // Offsets 0..2 at 1000, 3000, 2000 (create times need not rise), then offset 3 at 5000.
  produce(d.port(), 3, "times", 0,
          exact_producer_batch({{"a", "0", {}, 0}, {"b", "1", {}, 2000}, {"c", "2", {}, 1000}}, 1000));
  produce(d.port(), 3, "times", 0, exact_producer_batch({{"d", "3", {}, 0}}, 5000));
  for (int16_t version : {int16_t{1}, int16_t{2}}) {
    INFO("ListOffsets v" << version);
    CHECK(list_offset(d.port(), version, "times", 0) == std::pair<int64_t, int64_t>{0, 1000});
    CHECK(list_offset(d.port(), version, "times", 1000) == std::pair<int64_t, int64_t>{0, 1000});
    CHECK(list_offset(d.port(), version, "times", 1500) == std::pair<int64_t, int64_t>{1, 3000});
    CHECK(list_offset(d.port(), version, "times", 3001) == std::pair<int64_t, int64_t>{3, 5000});
    CHECK(list_offset(d.port(), version, "times", 5000) == std::pair<int64_t, int64_t>{3, 5000});
    CHECK(list_offset(d.port(), version, "times", 5001) == std::pair<int64_t, int64_t>{-1, -1});
    CHECK(list_offset(d.port(), version, "times", -1).first == 4);  // latest
    CHECK(list_offset(d.port(), version, "times", -2).first == 0);  // earliest
  }
  CHECK(list_offset(d.port(), 0, "times", 1500).first == 1);
  CHECK(list_offset(d.port(), 0, "times", 9000).first == -1);  // v0: no offset at all
}

// One record of about 900 KiB: two of them are more than a consumer asking for 1,000,000 bytes takes.
std::string big_record_batch(char fill) {
  return exact_producer_batch({{"k", std::string(900 << 10, fill), {}, 0}}, now_ms());
}

TEST_CASE(
    "kafka: KIP-74, a Fetch answers more than max_bytes only for the first batch of the first partition") {
  KafkaDaemon d;
  TestSocket s(d.port());
  create_topic_with(d.port(), "big", 2, "retention.ms", "-1");
  produce(d.port(), 3, "big", 0, big_record_batch('a'));
  produce(d.port(), 3, "big", 1, big_record_batch('b'));
  produce(d.port(), 3, "big", 0, big_record_batch('c'));

  SECTION("two partitions under fetch.max.bytes 1,000,000: one batch, then the other partition's") {
    std::deque<std::string> arena;
    auto parts = fetch(d.port(), 11, "big", {{0, 0}, {1, 0}}, arena, 1'000'000);
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].batches.size() == 1);
    CHECK(parts[1].batches.empty());
    CHECK(parts[0].record_bytes + parts[1].record_bytes <= 1'000'000);
    // The consumer moves on: partition 0 from offset 1, partition 1 still from 0 (asked first now).
    parts = fetch(d.port(), 11, "big", {{1, 0}, {0, 1}}, arena, 1'000'000);
    REQUIRE(parts[0].batches.size() == 1);
    CHECK(parts[0].batches[0].records[0].value->front() == 'b');
    CHECK(parts[1].batches.empty());
  }
  SECTION("a first batch larger than both limits still goes out, alone") {
    std::deque<std::string> arena;
    auto parts = fetch(d.port(), 4, "big", {{0, 0, 1000}, {1, 0, 1000}}, arena, 1000);
    REQUIRE(parts[0].batches.size() == 1);
    CHECK(parts[0].batches[0].records[0].value->front() == 'a');
    CHECK(parts[1].batches.empty());
  }
  SECTION("a partition's max_bytes holds for every partition but the first with data") {
    std::deque<std::string> arena;
    auto parts = fetch(d.port(), 7, "big", {{0, 5}, {1, 0, 1000}}, arena);  // partition 0 has nothing at 5
    CHECK(parts[0].error == 1);                                             // OFFSET_OUT_OF_RANGE
    REQUIRE(parts[1].batches.size() == 1);  // the first partition with data, over its 1000 bytes
    // Partition 0's own 1 MiB takes its first batch (forced) but not the second; partition 1's 1000 bytes
    // take nothing.
    parts = fetch(d.port(), 7, "big", {{0, 0}, {1, 0, 1000}}, arena);
    CHECK(parts[0].batches.size() == 1);
    CHECK(parts[1].batches.empty());
  }
}

// A data directory as a broker before batch version 2 left it: version 1 batches under a version 1
// STREAM file, written with the version 1 encoder kept for tests.
void write_version1_data_dir(const std::string& data_dir) {
  ThreadPool pool(2);
  SystemClock clock;
  streamd::testing::ManualScheduler scheduler;
  BrokerOptions options;
  options.retention_check_period = std::chrono::milliseconds(0);
  auto broker = Broker::open(posix_file_system(), data_dir, options, pool, clock, scheduler);
  REQUIRE(broker.ok());
  REQUIRE((*broker)->create_stream("old", Policy{}, false).ok());
  const std::vector<Record> records = {{"k", "one", {{"h", "x"}}}, {"", "unkeyed", {}}, {"k", "", {}}};
  std::vector<RecordInput> checks;
  for (const Record& r : records) checks.push_back({r.key, r.payload, {}});
  std::promise<Result<AppendResult>> done;
  (*broker)->append_batch_to_partition("old", PartitionId(0), false, checks,
                                       streamd::testing::v1_batch(records),
                                       [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
  REQUIRE(done.get_future().get().ok());
  (*broker)->close();
  // The STREAM file as version 1 wrote it: without the timestamp type.
  const std::string path = data_dir + "/streams/old/STREAM";
  std::string meta(std::filesystem::file_size(path), '\0');
  std::ifstream(path, std::ios::binary).read(meta.data(), static_cast<std::streamsize>(meta.size()));
  REQUIRE(meta.size() == stream_meta_format::kSize);
  meta.resize(stream_meta_format::kSizeV1 - 4);
  meta[4] = static_cast<char>(stream_meta_format::kVersion1);
  char crc[4];
  coding::put_fixed32(crc, crc32c(meta));
  meta.append(crc, 4);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << meta;
}

TEST_CASE("kafka: a data directory written before batch version 2 reads as it did, LogAppendTime") {
  DaemonProcess daemon({"--kafka.listen", "127.0.0.1:0"});
  write_version1_data_dir(daemon.data_dir());
  REQUIRE(daemon.start());
  const uint16_t port = daemon.kafka_port();
  std::deque<std::string> arena;
  auto parts = fetch(port, 11, "old", {{0, 0}}, arena);
  REQUIRE(parts[0].batches.size() == 1);
  const AnsweredBatch old = parts[0].batches[0];
  CHECK((old.attributes & batch_v2::kLogAppendTime) != 0);
  REQUIRE(old.records.size() == 3);
  CHECK(old.records[0].key == std::optional<std::string_view>("k"));
  CHECK(old.records[0].headers.size() == 1);
  CHECK_FALSE(old.records[1].key.has_value());    // version 1's empty key: no key
  CHECK_FALSE(old.records[2].value.has_value());  // version 1's empty payload under a key: a tombstone
  // The stream stays LogAppendTime: a producer's timestamp of a new batch is kept but not shown.
  produce(port, 3, "old", 0, exact_producer_batch({{"k", "new", {}, 0}}, 1000));
  parts = fetch(port, 4, "old", {{0, 3}}, arena);
  REQUIRE(parts[0].batches.size() == 1);
  CHECK((parts[0].batches[0].attributes & batch_v2::kLogAppendTime) != 0);
  CHECK(parts[0].batches[0].base_timestamp >= old.base_timestamp);
  CHECK(list_offset(port, 1, "old", 0) == std::pair<int64_t, int64_t>{0, old.base_timestamp});
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::kafka
