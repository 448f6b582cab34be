// TxnAdmin: the native protocol's transaction requests (docs/PROTOCOL.md §Transactions), one synchronous
// call each over a shared Connection: a transactional producer's InitProducer, TxnCommitOffsets and
// EndTxn (which TransactionalProducer makes for its caller), and the operator's list, describe and
// abort (streamctl txn). Errors are the broker's, or UNAVAILABLE when it cannot be reached.
//
// Thread-safe, as Admin is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

struct GroupOffsetAt {
  int32_t partition = 0;
  uint64_t next = 0;  // the offset the group reads next
};

class TxnAdmin {
 public:
  // A zero timeout means the connection's request_timeout.
  explicit TxnAdmin(Connection& connection, std::chrono::milliseconds timeout = {})
      : connection_(connection), timeout_(timeout) {}

  // The transactional id's producer: its next epoch, which fences every earlier instance, once what
  // the id left open is aborted. `current` names the caller's own identity when it has one.
  Result<ProducerIdentity> init_producer(const std::string& transactional_id,
                                         std::chrono::milliseconds transaction_timeout,
                                         const std::optional<ProducerIdentity>& current = std::nullopt);
  // Stages the group's offsets on `stream` in the producer's open transaction.
  Status commit_offsets(const std::string& transactional_id, ProducerIdentity producer, const std::string& stream,
                        const std::string& group, const std::vector<GroupOffsetAt>& offsets);
  Status end(const std::string& transactional_id, ProducerIdentity producer, bool commit);

  Result<std::vector<TransactionInfo>> list();
  Result<TransactionInfo> describe(const std::string& transactional_id);
  // The transaction after the abort.
  Result<TransactionInfo> abort(const std::string& transactional_id);

 private:
  Connection& connection_;
  std::chrono::milliseconds timeout_;
};

}  // namespace streamd::client
