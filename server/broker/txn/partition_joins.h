// PartitionJoins: native transactional appends to a partition keep the order they arrived in while the
// partition joins their transaction (docs/TRANSACTIONS.md §"Native transactions").
//
// A native producer pipelines batches: its first batches to a partition may all arrive before the
// coordinator has made the partition part of the transaction. The first asks the coordinator
// (TxnCoordinator::add_partitions: a write to the database first on PostgreSQL, answered at once on
// files, TxnLog::join); those arriving meanwhile wait behind it and are
// written, in order, right after it, with its outcome. Once the partition is in the transaction a batch
// is written at once. Without this, a batch whose join finished first would reach the partition ahead
// of an earlier one, and its sequence would be refused OUT_OF_ORDER_SEQUENCE.
//
// The coordinator changes one id's transaction at a time, so a producer's first batches to several
// partitions would join one durable write after another. Partitions a producer's batches reach while
// one of its joins is under way join together in the next: a transaction over n partitions waits for
// two joins, not n.
//
// Thread-safety: submit() may be called from any thread; `write` runs on the caller's thread or the
// coordinator's, under this object's lock, so that writes keep their order.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/broker/txn/txn_coordinator.h"

namespace streamd {

class PartitionJoins {
 public:
  using Write = std::function<void(Status joined)>;

  explicit PartitionJoins(TxnCoordinator& txns) : txns_(txns) {}

  // Runs `write(OK)` once `at` is in the Ongoing transaction of `producer`, after every earlier
  // batch submitted for it; `write(error)` when joining failed.
  void submit(const std::string& transactional_id, ProducerIdentity producer, const TxnPartition& at, Write write);

 private:
  // One producer's joins: the partitions of the join under way and of the next, each with the batches
  // waiting for it, in arrival order.
  struct Joins {
    std::map<TxnPartition, std::vector<Write>> under_way;
    std::map<TxnPartition, std::vector<Write>> next;
  };
  using Key = std::tuple<std::string, int64_t, int16_t>;  // transactional id, producer id and epoch

  // Asks the coordinator to add the partitions of `joins.under_way` (mu_ not held).
  void start(const std::string& transactional_id, ProducerIdentity producer, std::vector<TxnPartition> partitions);
  // Answers the batches of the join that ended, and starts the next one, if any.
  void joined(const std::string& transactional_id, ProducerIdentity producer, const Status& s);

  TxnCoordinator& txns_;
  std::mutex mu_;
  std::map<Key, Joins> joins_;  // producers with a join under way
};

}  // namespace streamd
