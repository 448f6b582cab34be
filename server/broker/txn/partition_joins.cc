#include "server/broker/txn/partition_joins.h"

namespace streamd {

void PartitionJoins::submit(const std::string& transactional_id, ProducerIdentity producer, const TxnPartition& at,
                            Write write) {
  Key key{transactional_id, at};
  {
    std::lock_guard lock(mu_);
    if (auto it = joining_.find(key); it != joining_.end()) {
      it->second.push_back(std::move(write));
      return;
    }
    if (txns_.holds(transactional_id, producer, at)) return write(Status());
    joining_.emplace(key, std::vector<Write>{});
  }
  txns_.add_partitions(transactional_id, producer, {at},
                       [this, key = std::move(key), write = std::move(write)](Status joined) {
                         std::lock_guard lock(mu_);
                         write(joined);
                         auto it = joining_.find(key);
                         for (Write& w : it->second) w(joined);
                         joining_.erase(it);
                       });
}

}  // namespace streamd
