#include "client/transactional_producer.h"

#include "client/retry.h"

namespace streamd::client {

Result<std::unique_ptr<TransactionalProducer>> TransactionalProducer::open(Connection& connection,
                                                                         std::string transactional_id,
                                                                         TransactionOptions options) {
  if (transactional_id.empty()) {
    return Error(ErrorCode::kStreamMisconfigured, "a transactional producer has a transactional id",
                 {{"field", "transactional_id"}});
  }
  TxnAdmin admin(connection);
  Result<ProducerIdentity> identity = Error(ErrorCode::kUnavailable);
  Status s = retry_transaction_call(options.call_timeout, [&] {
    identity = admin.init_producer(transactional_id, options.transaction_timeout);
    return identity.status();
  });
  if (!s.ok()) return s.error();
  return std::unique_ptr<TransactionalProducer>(
      new TransactionalProducer(connection, std::move(transactional_id), std::move(options), *identity));
}

TransactionalProducer::TransactionalProducer(Connection& connection, std::string transactional_id,
                                             TransactionOptions options, ProducerIdentity identity)
    : connection_(connection), id_(std::move(transactional_id)), options_(std::move(options)), identity_(identity) {}

ProducerIdentity TransactionalProducer::identity() const {
  std::lock_guard lock(mu_);
  return identity_;
}

Result<Producer*> TransactionalProducer::producer_for(const std::string& stream) {
  if (auto it = producers_.find(stream); it != producers_.end()) return it->second.get();
  ProducerOptions options = options_.producer;
  options.idempotent = true;
  options.identity = identity_;
  options.transactional_id = id_;
  auto opened = Producer::open(connection_, stream, std::move(options));
  if (!opened.ok()) return opened.error();
  Producer* p = opened->get();
  failed_before_[stream] = 0;
  producers_.emplace(stream, std::move(*opened));
  return p;
}

void TransactionalProducer::send(const std::string& stream, Record record, DeliveryCallback done) {
  Producer* producer = nullptr;
  {
    std::lock_guard lock(mu_);
    sent_ = true;
    auto p = producer_for(stream);
    if (!p.ok()) {
      // The record fails as its batch would: the transaction cannot commit.
      if (!refused_) refused_ = p.error();
      ++refused_records_;
      if (done) done(p.error());
      return;
    }
    producer = *p;
  }
  producer->send(std::move(record), std::move(done));
}

Status TransactionalProducer::send_offsets(const std::string& stream, const std::string& group,
                                           const std::vector<GroupOffsetAt>& offsets) {
  const ProducerIdentity p = identity();
  {
    std::lock_guard lock(mu_);
    sent_ = true;
  }
  TxnAdmin admin(connection_);
  return retry_transaction_call(options_.call_timeout,
                                [&] { return admin.commit_offsets(id_, p, stream, group, offsets); });
}

Status TransactionalProducer::settle() {
  std::lock_guard lock(mu_);
  std::vector<Producer*> all;
  for (auto& [stream, producer] : producers_) all.push_back(producer.get());
  Producer::flush_all(all);
  uint64_t failed = refused_records_;
  std::optional<Error> last = refused_;
  for (auto& [stream, producer] : producers_) {
    const uint64_t of_stream = producer->failed_records() - failed_before_[stream];
    if (of_stream == 0) continue;
    failed += of_stream;
    last = producer->last_error().value_or(Error(ErrorCode::kUnavailable)).with("stream", stream);
  }
  if (!last) return Status();
  return Error(last->code(), last->name(),
               last->message() + "; " + std::to_string(failed) + " record(s) of the transaction failed: abort it",
               last->fields())
      .with("failed_records", std::to_string(failed));
}

void TransactionalProducer::start_over() {
  std::lock_guard lock(mu_);
  for (auto& [stream, producer] : producers_) failed_before_[stream] = producer->failed_records();
  sent_ = false;
  refused_.reset();
  refused_records_ = 0;
}

Status TransactionalProducer::commit() {
  {
    std::lock_guard lock(mu_);
    if (!sent_) return Status();
  }
  if (Status s = settle(); !s.ok()) return s;
  TxnAdmin admin(connection_);
  const ProducerIdentity p = identity();
  // A retry of a commit that was carried out is answered OK.
  if (Status s = retry_transaction_call(options_.call_timeout, [&] { return admin.end(id_, p, true); }); !s.ok()) {
    return s;
  }
  start_over();
  return Status();
}

Status TransactionalProducer::abort() {
  (void)settle();  // what failed is being discarded anyway
  bool new_epoch = false;
  bool sent = false;
  {
    std::lock_guard lock(mu_);
    sent = sent_;
    for (auto& [stream, producer] : producers_) new_epoch = new_epoch || producer->needs_new_epoch();
  }
  TxnAdmin admin(connection_);
  if (new_epoch) {
    // The coordinator aborts the open transaction with an epoch bump, then gives the next epoch.
    Result<ProducerIdentity> next = Error(ErrorCode::kUnavailable);
    Status s = retry_transaction_call(options_.call_timeout, [&] {
      next = admin.init_producer(id_, options_.transaction_timeout, identity());
      return next.status();
    });
    if (!s.ok()) return s;
    std::lock_guard lock(mu_);
    identity_ = *next;
    for (auto& [stream, producer] : producers_) producer->reset_identity(identity_);
  } else if (sent) {
    const ProducerIdentity p = identity();
    Status s = retry_transaction_call(options_.call_timeout, [&] { return admin.end(id_, p, false); });
    // Nothing of it reached the broker (every batch refused before its partition joined): nothing to end.
    if (!s.ok() && !s.error().is(ErrorCode::kInvalidTxnState)) return s;
  }
  start_over();
  return Status();
}

}  // namespace streamd::client
