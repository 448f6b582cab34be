#include "client/txn_admin.h"

#include "streamd.pb.h"

namespace streamd::client {
namespace {

void to_proto(const std::string& transactional_id, ProducerIdentity p, v1::TxnProducer* out) {
  out->set_transactional_id(transactional_id);
  out->set_producer_id(p.id);
  out->set_epoch(p.epoch);
}

TransactionInfo from_proto(const v1::TransactionInfo& t) {
  TransactionInfo out{t.transactional_id(), {t.producer_id(), t.epoch()}, t.state(), t.timeout_ms(),
                      t.started_at_us(), {}, {}, {}};
  for (const auto& p : t.partitions()) out.partitions.push_back({p.stream(), p.partition()});
  for (const auto& g : t.groups()) out.groups.push_back(g);
  for (const auto& o : t.offsets()) out.offsets.push_back({o.group(), o.stream(), o.partition(), o.next()});
  return out;
}

}  // namespace

Result<ProducerIdentity> TxnAdmin::init_producer(const std::string& transactional_id,
                                                 std::chrono::milliseconds transaction_timeout,
                                                 const std::optional<ProducerIdentity>& current) {
  v1::Request request;
  auto* body = request.mutable_init_producer();
  body->set_transactional_id(transactional_id);
  body->set_transaction_timeout_ms(static_cast<int32_t>(transaction_timeout.count()));
  if (current) {
    body->set_has_current(true);
    body->set_producer_id(current->id);
    body->set_epoch(current->epoch);
  }
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return ProducerIdentity{response.init_producer().producer_id(), response.init_producer().epoch()};
}

Status TxnAdmin::commit_offsets(const std::string& transactional_id, ProducerIdentity producer,
                                const std::string& stream, const std::string& group,
                                const std::vector<GroupOffsetAt>& offsets) {
  v1::Request request;
  auto* body = request.mutable_txn_commit_offsets();
  to_proto(transactional_id, producer, body->mutable_producer());
  body->set_stream(stream);
  body->set_group(group);
  for (const GroupOffsetAt& o : offsets) {
    auto* w = body->add_offsets();
    w->set_partition(o.partition);
    w->set_next(o.next);
  }
  v1::Response response;
  return connection_.call(request, &response, timeout_);
}

Status TxnAdmin::end(const std::string& transactional_id, ProducerIdentity producer, bool commit) {
  v1::Request request;
  auto* body = request.mutable_end_txn();
  to_proto(transactional_id, producer, body->mutable_producer());
  body->set_commit(commit);
  v1::Response response;
  return connection_.call(request, &response, timeout_);
}

Result<std::vector<TransactionInfo>> TxnAdmin::list() {
  v1::Request request;
  request.mutable_list_transactions();
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  std::vector<TransactionInfo> out;
  for (const auto& t : response.list_transactions().transactions()) out.push_back(from_proto(t));
  return out;
}

Result<TransactionInfo> TxnAdmin::describe(const std::string& transactional_id) {
  v1::Request request;
  request.mutable_describe_transaction()->set_transactional_id(transactional_id);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return from_proto(response.describe_transaction().transaction());
}

Result<TransactionInfo> TxnAdmin::abort(const std::string& transactional_id) {
  v1::Request request;
  request.mutable_abort_transaction()->set_transactional_id(transactional_id);
  v1::Response response;
  if (Status s = connection_.call(request, &response, timeout_); !s.ok()) return s.error();
  return from_proto(response.abort_transaction().transaction());
}

}  // namespace streamd::client
