// A data directory holding stream "tx", one partition of committed, aborted and open transactions,
// written by a broker in the test process before a daemon serves it: no protocol sends transactional
// batches of its own making. The target that includes this links streamd_broker.
//
// Offsets: 0 "a"; 1 "c1" (producer 7, committed by the marker at 3); 2 "x1" (producer 8, aborted by the
// marker at 4); 5 "b"; 6 "open" (producer 9, still open); 7 "after". Next 8, last stable offset 6.
// The coordinator's state holds producer 9's transaction ("sample-open", Ongoing, 15 minutes), as a
// transactional producer's would be: a broker aborts at start what no transactional id holds.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/storage/batch_builder.h"
#include "server/storage/record_reader.h"
#include "server/storage/txn_log.h"
#include "server/storage/txn_marker.h"
#include "tests/broker/manual_scheduler.h"

namespace streamd::testing {

inline void write_txn_sample(const std::string& data_dir) {
  auto batch_of = [](int64_t producer, const std::string& payload) {
    const ProducerFields fields = producer >= 0 ? ProducerFields{producer, 0, 0} : ProducerFields{};
    BatchBuilder b(BatchOptions{false, producer >= 0, false, fields});
    b.add("", payload);
    return std::move(b).finish();
  };
  ThreadPool pool(2);
  SystemClock clock;
  ManualScheduler scheduler;
  BrokerOptions options;
  options.retention_check_period = std::chrono::milliseconds(0);
  auto broker = ::streamd::Broker::open(posix_file_system(), data_dir, options, pool, clock, scheduler);
  REQUIRE(broker.ok());
  REQUIRE((*broker)->create_stream("tx", Policy{}, false).ok());
  for (std::string batch :
       {batch_of(-1, "a"), batch_of(7, "c1"), batch_of(8, "x1"),
        build_txn_marker(7, 0, MarkerType::kCommit, 0), build_txn_marker(8, 0, MarkerType::kAbort, 0),
        batch_of(-1, "b"), batch_of(9, "open"), batch_of(-1, "after")}) {
    std::vector<RecordInput> checks;
    RecordReader records(batch);
    RecordView r;
    while (records.next(r)) checks.push_back({std::string(r.key), std::string(r.payload), {}});
    std::promise<Result<AppendResult>> done;
    (*broker)->append_batch_to_partition("tx", PartitionId(0), false, checks, std::move(batch),
                                         [&](Result<AppendResult> a) { done.set_value(std::move(a)); });
    REQUIRE(done.get_future().get().ok());
  }
  (*broker)->close();
  auto txns = TxnLog::open(posix_file_system(), data_dir, pool);
  REQUIRE(txns.ok());
  auto wait = [](const std::function<void(TxnLog::Done)>& change) {
    std::promise<Status> done;
    change([&](Status s) { done.set_value(std::move(s)); });
    REQUIRE(done.get_future().get().ok());
  };
  wait([&](TxnLog::Done d) {
    (*txns)->set({"sample-open", 9, 0, 15 * 60 * 1000, TxnStatus::kOngoing, clock.now()}, std::move(d));
  });
  wait([&](TxnLog::Done d) { (*txns)->add_partitions("sample-open", {{"tx", 0}}, std::move(d)); });
  (*txns)->close();
}

}  // namespace streamd::testing
