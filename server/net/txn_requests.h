// The native protocol's transaction requests (docs/PROTOCOL.md §Transactions) over the broker's
// coordinator (server/broker/txn/txn_coordinator.h): InitProducer with a transactional id,
// TxnCommitOffsets, EndTxn, and the operator's ListTransactions, DescribeTransaction and
// AbortTransaction. The transactional append itself is RequestHandler::append's
// (Broker::append_in_transaction).
//
// Called on the network loop; each answer is sent from the loop once the coordinator has made its
// change durable. InitProducer runs on `blocking`: the coordinator may allocate a block of producer ids,
// which syncs. An engine without transactions is answered INVALID_TXN_STATE.
#pragma once

#include <memory>

#include "server/broker/broker.h"
#include "server/net/connection.h"
#include "server/storage/executor.h"
#include "streamd.pb.h"

namespace asio {
class io_context;
}

namespace streamd {

// The transaction requests: InitProducer only with a transactional id.
bool is_txn_request(const v1::Request& request);
void handle_txn_request(asio::io_context& io, Broker& broker, Executor& blocking,
                        const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                        std::unique_ptr<v1::Request> request);

}  // namespace streamd
