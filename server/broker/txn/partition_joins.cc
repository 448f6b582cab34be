#include "server/broker/txn/partition_joins.h"

namespace streamd {

void PartitionJoins::submit(const std::string& transactional_id, ProducerIdentity producer, const TxnPartition& at,
                            Write write) {
  {
    std::lock_guard lock(mu_);
    auto it = joins_.find({transactional_id, producer.id, producer.epoch});
    if (it != joins_.end()) {
      Joins& j = it->second;
      if (auto w = j.under_way.find(at); w != j.under_way.end()) {
        w->second.push_back(std::move(write));
      } else {
        j.next[at].push_back(std::move(write));  // joins with the producer's next
      }
      return;
    }
    if (txns_.holds(transactional_id, producer, at)) return write(Status());
    joins_[{transactional_id, producer.id, producer.epoch}].under_way[at].push_back(std::move(write));
  }
  start(transactional_id, producer, {at});
}

void PartitionJoins::start(const std::string& transactional_id, ProducerIdentity producer,
                           std::vector<TxnPartition> partitions) {
  txns_.add_partitions(transactional_id, producer, std::move(partitions),
                       [this, transactional_id, producer](Status s) { joined(transactional_id, producer, s); });
}

void PartitionJoins::joined(const std::string& transactional_id, ProducerIdentity producer, const Status& s) {
  std::vector<TxnPartition> next;
  {
    std::lock_guard lock(mu_);
    auto it = joins_.find({transactional_id, producer.id, producer.epoch});
    Joins& j = it->second;
    for (auto& [at, writes] : j.under_way) {
      for (Write& w : writes) w(s);
    }
    j.under_way = std::move(j.next);
    j.next.clear();
    if (j.under_way.empty()) {
      joins_.erase(it);
      return;
    }
    for (const auto& [at, writes] : j.under_way) next.push_back(at);
  }
  start(transactional_id, producer, std::move(next));
}

}  // namespace streamd
