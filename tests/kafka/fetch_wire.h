// Fetch and ListOffsets over raw sockets, as the Kafka listener's wire tests ask them and read their
// answers (kafka_format_wire_test.cc, kafka_txn_wire_test.cc).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/kafka/codec.h"
#include "server/kafka/record_batch.h"
#include "tests/kafka/batch_helpers.h"
#include "tests/kafka/wire_helpers.h"

namespace streamd::kafka::testing {

struct FetchPartitionAsk {
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t max_bytes = 1 << 20;
};

// A Fetch body of `version` (4, 7 or 11) for partitions of one topic, at isolation level `isolation`.
inline std::string fetch_request(int16_t version, const std::string& topic,
                                 const std::vector<FetchPartitionAsk>& parts, int32_t max_bytes = 50 << 20,
                                 int8_t isolation = 0) {
  std::string b;
  Writer w(b);
  w.i32(-1);  // replica
  w.i32(0);   // max wait
  w.i32(1);   // min bytes
  w.i32(max_bytes);
  w.i8(isolation);
  if (version >= 7) {
    w.i32(0);
    w.i32(-1);
  }
  w.array_count(1);
  w.string(topic);
  w.array_count(static_cast<int32_t>(parts.size()));
  for (const FetchPartitionAsk& p : parts) {
    w.i32(p.partition);
    if (version >= 9) w.i32(-1);
    w.i64(p.offset);
    if (version >= 5) w.i64(-1);
    w.i32(p.max_bytes);
  }
  if (version >= 7) w.array_count(0);
  if (version >= 11) w.string("");
  return b;
}

struct AnsweredBatch {
  int64_t base_offset = 0;
  int16_t attributes = 0;  // as answered, the transactional bit included
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  std::vector<KafkaRecord> records;
};

struct AnsweredPartition {
  int32_t partition = 0;
  int16_t error = 0;
  int64_t high_watermark = -1;
  int64_t last_stable = -1;
  size_t record_bytes = 0;
  std::vector<AnsweredBatch> batches;
};

// One Fetch answer's partitions, their batches decoded as the broker's own Produce decoder reads them.
inline std::vector<AnsweredPartition> parse_fetch(const std::string& answer, int16_t version,
                                                  std::deque<std::string>& arena) {
  Reader r(answer);
  r.i32();  // correlation
  r.i32();  // throttle
  if (version >= 7) {
    CHECK(r.i16() == 0);
    r.i32();
  }
  std::vector<AnsweredPartition> out;
  const int32_t topics = r.count();
  for (int32_t t = 0; t < topics; ++t) {
    r.string();
    const int32_t partitions = r.count();
    for (int32_t i = 0; i < partitions; ++i) {
      AnsweredPartition& p = out.emplace_back();
      p.partition = r.i32();
      p.error = r.i16();
      p.high_watermark = r.i64();
      p.last_stable = r.i64();
      if (version >= 5) r.i64();
      CHECK(r.count() == 0);  // aborted transactions
      if (version >= 11) r.i32();
      const std::string_view records = r.raw(static_cast<size_t>(r.i32()));
      p.record_bytes = records.size();
      for (size_t pos = 0; pos < records.size();) {
        const auto length = static_cast<size_t>(get_be32(records.data() + pos + batch_v2::kLength));
        std::string batch(records.substr(pos, batch_v2::kLogOverhead + length));
        pos += batch.size();
        Reader h(batch);
        AnsweredBatch& b = p.batches.emplace_back();
        b.base_offset = h.i64();
        h.i32();
        h.i32();
        h.i8();
        h.u32();
        b.attributes = h.i16();
        h.i32();
        b.base_timestamp = h.i64();
        b.max_timestamp = h.i64();
        // A control batch is never answered (docs/TRANSACTIONS.md §Reading).
        CHECK((b.attributes & batch_v2::kControl) == 0);
        // What a producer would send: the LogAppendTime and transactional bits cleared (they change
        // nothing of the records; the Produce decoder takes no transactional batch).
        batch[batch_v2::kAttributes + 1] = static_cast<char>(
            batch[batch_v2::kAttributes + 1] & ~(batch_v2::kLogAppendTime | batch_v2::kTransactional));
        testing::reseal(batch);
        arena.push_back(std::move(batch));
        const DecodeResult d = decode_record_set(arena.back(), 64 << 20, b.records, arena);
        INFO(d.reason);
        REQUIRE(d.error == Error::kNone);
      }
    }
  }
  REQUIRE_FALSE(r.failed());
  return out;
}

inline std::vector<AnsweredPartition> fetch(uint16_t port, int16_t version, const std::string& topic,
                                            const std::vector<FetchPartitionAsk>& parts,
                                            std::deque<std::string>& arena, int32_t max_bytes = 50 << 20,
                                            int8_t isolation = 0) {
  TestSocket s(port);
  REQUIRE(s.send_all(frame(1, version, 5, fetch_request(version, topic, parts, max_bytes, isolation))));
  auto answer = s.read_frame();
  REQUIRE(answer);
  return parse_fetch(*answer, version, arena);
}

// ListOffsets of `version` (0-2) for one partition: {offset, timestamp}; v0 answers no timestamp (-1), and
// an empty offsets array as offset -1. Versions 2 and later ask at isolation level `isolation`.
inline std::pair<int64_t, int64_t> list_offset(uint16_t port, int16_t version, const std::string& topic,
                                               int64_t time, int8_t isolation = 0) {
  std::string b;
  Writer w(b);
  w.i32(-1);
  if (version >= 2) w.i8(isolation);
  w.array_count(1);
  w.string(topic);
  w.array_count(1);
  w.i32(0);
  w.i64(time);
  if (version == 0) w.i32(1);
  TestSocket s(port);
  REQUIRE(s.send_all(frame(2, version, 9, b)));
  auto answer = s.read_frame();
  REQUIRE(answer);
  Reader r(*answer);
  r.i32();
  if (version >= 2) r.i32();
  REQUIRE(r.count() == 1);
  r.string();
  REQUIRE(r.count() == 1);
  r.i32();
  CHECK(r.i16() == 0);
  if (version == 0) {
    const int32_t n = r.count();
    return {n == 0 ? -1 : r.i64(), -1};
  }
  const int64_t timestamp = r.i64();
  const int64_t offset = r.i64();
  REQUIRE_FALSE(r.failed());
  return {offset, timestamp};
}

}  // namespace streamd::kafka::testing
