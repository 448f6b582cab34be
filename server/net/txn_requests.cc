#include "server/net/txn_requests.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <string>
#include <utility>
#include <vector>

namespace streamd {
namespace {

// Kafka's default transaction.timeout.ms, for an InitProducer that names none.
constexpr int32_t kDefaultTransactionTimeoutMs = 60'000;

// Answers, from the loop, with `fill`'s body or with `status` when it failed.
class TxnReply {
 public:
  TxnReply(asio::io_context& io, std::shared_ptr<Connection> conn, Ticket ticket)
      : io_(io), conn_(std::move(conn)), ticket_(ticket) {}

  void send(const Status& status, const std::function<void(v1::Response&)>& fill) const {
    v1::Response response;
    response.set_id(ticket_.id);
    if (status.ok()) fill(response);
    asio::post(io_, [conn = conn_, ticket = ticket_, status, response = std::move(response)] {
      if (!status.ok()) return conn->reply_error(ticket, status);
      conn->reply(ticket, response);
    });
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<Connection> conn_;
  Ticket ticket_;
};

Result<ProducerIdentity> producer_of(const v1::TxnProducer& p) {
  if (p.transactional_id().empty()) {
    return Status(Code::kProtocolError, "a transactional request names its transactional id",
                  {{"field", "transactional_id"}});
  }
  if (p.epoch() < 0 || p.epoch() > INT16_MAX) {
    return Status(Code::kProtocolError, "an epoch is between 0 and 32767",
                  {{"transactional_id", p.transactional_id()}, {"epoch", std::to_string(p.epoch())}});
  }
  return ProducerIdentity{p.producer_id(), static_cast<int16_t>(p.epoch())};
}

void to_wire(const TxnEntry& e, v1::TransactionInfo* out) {
  out->set_transactional_id(e.header.id);
  out->set_producer_id(e.header.producer_id);
  out->set_epoch(e.header.epoch);
  out->set_state(txn_status_name(e.header.status));
  out->set_timeout_ms(e.header.timeout_ms);
  out->set_started_at_us(e.header.started_at.micros);
  for (const TxnPartition& p : e.partitions) {
    auto* w = out->add_partitions();
    w->set_stream(p.stream);
    w->set_partition(p.partition);
  }
  for (const std::string& g : e.groups) out->add_groups(g);
  for (const TxnOffset& o : e.offsets) {
    auto* w = out->add_offsets();
    w->set_group(o.group);
    w->set_stream(o.at.stream);
    w->set_partition(o.at.partition);
    w->set_next(o.next.value);
  }
}

Status not_found(const std::string& id) {
  return Status(Code::kTransactionalIdNotFound, "The coordinator holds no such transactional id",
                {{"transactional_id", id}});
}

void init_producer(TxnCoordinator& txns, Executor& blocking, const v1::InitProducerRequest& r, TxnReply reply) {
  std::optional<ProducerIdentity> current;
  if (r.has_current()) {
    if (r.epoch() < 0 || r.epoch() > INT16_MAX) {
      return reply.send(Status(Code::kProtocolError, "an epoch is between 0 and 32767",
                               {{"epoch", std::to_string(r.epoch())}}),
                        {});
    }
    current = ProducerIdentity{r.producer_id(), static_cast<int16_t>(r.epoch())};
  }
  const int32_t timeout_ms = r.transaction_timeout_ms() == 0 ? kDefaultTransactionTimeoutMs : r.transaction_timeout_ms();
  blocking.post([&txns, id = r.transactional_id(), timeout_ms, current, reply] {
    txns.init_producer(id, timeout_ms, current, [reply](Result<ProducerIdentity> given) {
      reply.send(given.status(), [&](v1::Response& response) {
        response.mutable_init_producer()->set_producer_id(given->id);
        response.mutable_init_producer()->set_epoch(given->epoch);
      });
    });
  });
}

void commit_offsets(const Broker& broker, TxnCoordinator& txns, const v1::TxnCommitOffsetsRequest& r,
                    const TxnReply& reply) {
  auto producer = producer_of(r.producer());
  if (!producer.ok()) return reply.send(producer.status(), {});
  if (r.group().empty()) {
    return reply.send(Status::of(Code::kStreamMisconfigured, {{"field", "group"}, {"reason", "a group has a name"}}),
                      {});
  }
  std::vector<TxnOffset> offsets;
  offsets.reserve(static_cast<size_t>(r.offsets_size()));
  for (const v1::PartitionOffset& o : r.offsets()) {
    // Staged for a partition that exists, or the commit would drop it without a word.
    if (auto ends = broker.ends(r.stream(), PartitionId(o.partition())); !ends.ok()) return reply.send(ends.status(), {});
    offsets.push_back(TxnOffset{r.group(), {r.stream(), o.partition()}, Offset(o.next()), {}});
  }
  const std::string& id = r.producer().transactional_id();
  txns.add_group(id, *producer, r.group(),
                 [&txns, id, p = *producer, group = r.group(), offsets = std::move(offsets), reply](Status added) {
                   if (!added.ok()) return reply.send(added, {});
                   txns.stage_offsets(id, p, group, offsets, [reply](Status staged) {
                     reply.send(staged, [](v1::Response& response) { response.mutable_txn_commit_offsets(); });
                   });
                 });
}

void end_txn(TxnCoordinator& txns, const v1::EndTxnRequest& r, const TxnReply& reply) {
  auto producer = producer_of(r.producer());
  if (!producer.ok()) return reply.send(producer.status(), {});
  txns.end(r.producer().transactional_id(), *producer, r.commit(), [reply, commit = r.commit()](Status s) {
    reply.send(s, [commit](v1::Response& response) { response.mutable_end_txn()->set_committed(commit); });
  });
}

void abort_txn(TxnCoordinator& txns, const std::string& id, const TxnReply& reply) {
  txns.abort(id, [&txns, id, reply](Status s) {
    std::optional<TxnEntry> after = txns.find(id);
    if (s.ok() && !after) s = not_found(id);
    reply.send(s, [&](v1::Response& response) {
      to_wire(*after, response.mutable_abort_transaction()->mutable_transaction());
    });
  });
}

}  // namespace

bool is_txn_request(const v1::Request& request) {
  switch (request.body_case()) {
    case v1::Request::kInitProducer:
      return !request.init_producer().transactional_id().empty();
    case v1::Request::kTxnCommitOffsets:
    case v1::Request::kEndTxn:
    case v1::Request::kListTransactions:
    case v1::Request::kDescribeTransaction:
    case v1::Request::kAbortTransaction:
      return true;
    default:
      return false;
  }
}

void handle_txn_request(asio::io_context& io, Broker& broker, Executor& blocking,
                        const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                        std::unique_ptr<v1::Request> request) {
  const TxnReply reply(io, conn, ticket);
  TxnCoordinator* txns = broker.transactions();
  if (txns == nullptr) {
    return reply.send(Status(Code::kInvalidTxnState, "This broker's engine takes no transactions"), {});
  }
  switch (request->body_case()) {
    case v1::Request::kInitProducer:
      return init_producer(*txns, blocking, request->init_producer(), reply);
    case v1::Request::kTxnCommitOffsets:
      return commit_offsets(broker, *txns, request->txn_commit_offsets(), reply);
    case v1::Request::kEndTxn:
      return end_txn(*txns, request->end_txn(), reply);
    case v1::Request::kListTransactions:
      return reply.send(Status(), [&](v1::Response& response) {
        auto* body = response.mutable_list_transactions();
        for (const TxnEntry& e : txns->list()) to_wire(e, body->add_transactions());
      });
    case v1::Request::kDescribeTransaction: {
      const std::string& id = request->describe_transaction().transactional_id();
      std::optional<TxnEntry> e = txns->find(id);
      if (!e) return reply.send(not_found(id), {});
      return reply.send(Status(), [&](v1::Response& response) {
        to_wire(*e, response.mutable_describe_transaction()->mutable_transaction());
      });
    }
    case v1::Request::kAbortTransaction:
      return abort_txn(*txns, request->abort_transaction().transactional_id(), reply);
    default:
      return;
  }
}

}  // namespace streamd
