// server/kafka/errors.h: which Kafka error a client is told for a streamd refusal — in particular
// whether the client may take its batch as not written.
#include "server/kafka/errors.h"

#include <catch2/catch.hpp>

namespace streamd::kafka {
namespace {

TEST_CASE("a backend failure whose outcome is unknown is REQUEST_TIMED_OUT, one that wrote nothing KAFKA_STORAGE_ERROR") {
  // Possibly written: an idempotent producer must resend at its own sequence, not under a new epoch.
  const Status unknown(Code::kStreamBackendFailed, "PostgreSQL did not answer; the outcome is unknown",
                       {{"outcome", "unknown"}});
  CHECK(from_status(unknown) == Error::kRequestTimedOut);
  const Status refused(Code::kStreamBackendFailed, "PostgreSQL is unreachable", {{"shard", "b"}});
  CHECK(from_status(refused) == Error::kKafkaStorageError);
  CHECK(from_status(Status(Code::kStreamDirectoryUnusable, "unusable")) == Error::kKafkaStorageError);
}

TEST_CASE("a full stream is retriable as REQUEST_TIMED_OUT, a sequence gap and a stale epoch are the producer's") {
  CHECK(from_status(Status(Code::kStreamFull, "full")) == Error::kRequestTimedOut);
  CHECK(from_status(Status(Code::kOutOfOrderSequence, "gap")) == Error::kOutOfOrderSequenceNumber);
  CHECK(from_status(Status(Code::kProducerFenced, "fenced")) == Error::kInvalidProducerEpoch);
  CHECK(from_status(Status(Code::kInvalidTxnState, "no transaction open")) == Error::kInvalidTxnState);
  CHECK(from_status(Status(Code::kConcurrentTransactions, "ending")) == Error::kConcurrentTransactions);
  CHECK(from_status(Status(Code::kInvalidProducerIdMapping, "other id")) == Error::kInvalidProducerIdMapping);
  CHECK(from_status(Status(Code::kInvalidTransactionTimeout, "0")) == Error::kInvalidTransactionTimeout);
  CHECK(from_status(Status(Code::kTooManyTransactionalIds, "0")) == Error::kCoordinatorNotAvailable);
}

}  // namespace
}  // namespace streamd::kafka
