// TransactionalProducer: records to any number of streams, and a group's offsets, committed or aborted
// together (docs/CLIENT.md §Transactions; the broker's side is docs/TRANSACTIONS.md).
//
// open() takes the transactional id's producer from the broker's coordinator: the id's next epoch,
// which fences every earlier instance of the id once whatever it left open is aborted. A transaction
// begins with the first send() or send_offsets() after open(), commit() or abort(); the broker adds
// each partition to it as the first batch reaches it. Records go through one idempotent Producer per
// stream (producer.h), stamped with the id, so a resend is written once.
//
// commit() sends what lingers on every stream at once and waits until every record sent has its
// answer. If any failed, nothing is committed and the error says so: the caller aborts. Otherwise the
// broker commits: read_committed readers see every record at once, and the staged offsets are
// committed after them. abort() discards the records and
// the staged offsets. When a batch's outcome was unknown (its retries ran out), the abort takes the id's
// next epoch, so that no late copy of that batch can ever count. PRODUCER_FENCED from any call means
// another instance took the id over: this one can only be destroyed.
//
// A transaction left open when the object is destroyed is aborted by the broker, at its timeout or when
// the id is opened again.
//
// Thread-safety: send() may be called from several threads at once; send_offsets(), commit() and
// abort() from one thread, never while a send() runs. Delivery callbacks are the Producer's.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/producer.h"
#include "client/txn_admin.h"
#include "client/types.h"

namespace streamd::client {

struct TransactionOptions {
  // The broker aborts a transaction open longer than this (at most its limits.max_transaction_timeout).
  std::chrono::milliseconds transaction_timeout{60'000};
  // How long open(), send_offsets(), commit() and abort() retry UNAVAILABLE and CONCURRENT_TRANSACTIONS.
  std::chrono::milliseconds call_timeout{30'000};
  // For each stream's Producer; its identity and transactional id are set by the TransactionalProducer.
  ProducerOptions producer;
};

class TransactionalProducer {
 public:
  static Result<std::unique_ptr<TransactionalProducer>> open(Connection& connection, std::string transactional_id,
                                                             TransactionOptions options = {});
  TransactionalProducer(const TransactionalProducer&) = delete;
  TransactionalProducer& operator=(const TransactionalProducer&) = delete;

  void send(const std::string& stream, Record record, DeliveryCallback done = {});
  // Stages `group`'s offsets on `stream` in the transaction: committed with it, dropped if it aborts.
  Status send_offsets(const std::string& stream, const std::string& group, const std::vector<GroupOffsetAt>& offsets);
  Status commit();
  Status abort();

  const std::string& transactional_id() const { return id_; }
  ProducerIdentity identity() const;

 private:
  TransactionalProducer(Connection& connection, std::string transactional_id, TransactionOptions options,
                        ProducerIdentity identity);
  // The stream's producer, opened at its first record (caller holds mu_).
  Result<Producer*> producer_for(const std::string& stream);
  // Waits for every record's answer; the first failure since the transaction began, if any.
  Status settle();
  // The next transaction starts: what failed before no longer counts.
  void start_over();

  Connection& connection_;
  const std::string id_;
  const TransactionOptions options_;

  mutable std::mutex mu_;
  ProducerIdentity identity_;
  std::map<std::string, std::unique_ptr<Producer>> producers_;
  std::map<std::string, uint64_t> failed_before_;  // each producer's failed_records() as the transaction began
  bool sent_ = false;  // something was sent in the transaction: it ends at the broker
  // Records refused before any producer took them (a stream whose producer could not be opened).
  std::optional<Error> refused_;
  uint64_t refused_records_ = 0;
};

}  // namespace streamd::client
