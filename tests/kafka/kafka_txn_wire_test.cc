// Transactions through the Kafka listener's reads (docs/TRANSACTIONS.md §Reading): Fetch at isolation
// level 1 stops at the last stable offset and leaves aborted records out, level 0 reads them to the high
// watermark, neither sends a marker, and ListOffsets v2+ answers latest by isolation level, over the
// data directory of tests/support/txn_sample.h.
#include <catch2/catch.hpp>
#include <deque>
#include <string>
#include <vector>

#include "tests/kafka/fetch_wire.h"
#include "tests/support/txn_sample.h"

namespace streamd::kafka {
namespace {

using streamd::testing::DaemonProcess;
using testing::AnsweredPartition;
using testing::fetch;
using testing::list_offset;

// Each answered record as offset and value (every batch written above has consecutive records).
std::vector<std::pair<int64_t, std::string>> records_of(const AnsweredPartition& p) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& b : p.batches) {
    for (size_t i = 0; i < b.records.size(); ++i) {
      out.emplace_back(b.base_offset + static_cast<int64_t>(i), std::string(b.records[i].value.value_or("")));
    }
  }
  return out;
}

TEST_CASE("kafka: Fetch and ListOffsets by isolation level, markers never sent") {
  DaemonProcess daemon({"--kafka.listen", "127.0.0.1:0"});
  streamd::testing::write_txn_sample(daemon.data_dir());
  REQUIRE(daemon.start());
  const uint16_t port = daemon.kafka_port();
  using Records = std::vector<std::pair<int64_t, std::string>>;

  for (int16_t version : {int16_t{4}, int16_t{11}}) {
    INFO("Fetch v" << version);
    std::deque<std::string> arena;
    auto committed = fetch(port, version, "tx", {{0, 0}}, arena, 50 << 20, 1);
    REQUIRE(committed.size() == 1);
    CHECK(committed[0].error == 0);
    CHECK(committed[0].high_watermark == 8);
    CHECK(committed[0].last_stable == 6);
    CHECK(records_of(committed[0]) == Records{{0, "a"}, {1, "c1"}, {5, "b"}});
    // Held at the open transaction: nothing, and no error.
    auto held = fetch(port, version, "tx", {{0, 6}}, arena, 50 << 20, 1);
    CHECK(held[0].error == 0);
    CHECK(held[0].batches.empty());

    auto uncommitted = fetch(port, version, "tx", {{0, 0}}, arena, 50 << 20, 0);
    CHECK(uncommitted[0].last_stable == 6);
    CHECK(records_of(uncommitted[0]) ==
          Records{{0, "a"}, {1, "c1"}, {2, "x1"}, {5, "b"}, {6, "open"}, {7, "after"}});
    int transactional = 0;
    for (const auto& b : uncommitted[0].batches)
      transactional += (b.attributes & batch_v2::kTransactional) != 0;
    CHECK(transactional == 3);  // c1, x1 and open keep their producer's transactional batch
  }
  CHECK(list_offset(port, 2, "tx", -1, 1).first == 6);
  CHECK(list_offset(port, 2, "tx", -1, 0).first == 8);
  CHECK(list_offset(port, 1, "tx", -1).first == 8);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::kafka
