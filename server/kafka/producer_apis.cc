// InitProducerId 0-4 (docs/KAFKA.md §Idempotent producers): an idempotent producer's identity from the
// broker's engine (StreamEngine::init_producer), the same one native producers get. From v3 a producer
// names its current identity to bump its epoch after a fault (KIP-360), which librdkafka needs to go
// on instead of turning fatal. Allocation may sync a block of ids or ask the database, so it runs on
// the blocking executor. With a transactional id the broker's transaction coordinator answers
// (docs/TRANSACTIONS.md): the id's producer, fencing its previous instance; PRODUCER_FENCED from v4,
// INVALID_PRODUCER_EPOCH before.
#include <optional>
#include <string>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/kafka/offload.h"

namespace streamd::kafka {
namespace {

std::string answer(const Responder& responder, bool flexible, Error error, ProducerIdentity identity) {
  std::string frame = responder.start();
  Writer w(frame, flexible);
  w.i32(0);  // throttle time
  w.i16(code(error));
  w.i64(error == Error::kNone ? identity.id : -1);
  w.i16(error == Error::kNone ? identity.epoch : -1);
  w.tags();
  return frame;
}

}  // namespace

bool handle_init_producer_id(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::optional<std::string_view> transactional_id = r.nullable_str();
  const int32_t timeout_ms = r.i32();  // transactions only
  std::optional<ProducerIdentity> current;
  if (version >= 3) {
    const int64_t id = r.i64();
    const int16_t epoch = r.i16();
    if (id >= 0 && epoch >= 0) current = ProducerIdentity{id, epoch};
  }
  r.tags();
  if (r.failed()) return false;
  const bool flexible = request.flexible();
  if (transactional_id) {
    Services& services = request.services;
    TxnCoordinator* txns = services.broker.transactions();
    Error refusal = Error::kNone;
    if (txns == nullptr) refusal = Error::kCoordinatorNotAvailable;
    // A transactional id writes: it takes the right to write somewhere.
    else if (!request.principal.holds_anywhere(auth::Right::kWrite))
      refusal = Error::kTransactionalIdAuthorizationFailed;
    else if (transactional_id->empty())
      refusal = Error::kInvalidRequest;
    if (refusal != Error::kNone) {
      services.metrics.error(ApiKey::kInitProducerId, refusal);
      request.responder.send(answer(request.responder, flexible, refusal, {}));
      return true;
    }
    // The coordinator may allocate a block of producer ids, which syncs: off the loop.
    services.blocking.post([&services, txns, id = std::string(*transactional_id), timeout_ms, current,
                            responder = request.responder, flexible, version = request.version()] {
      txns->init_producer(id, timeout_ms, current,
                          [&services, responder, flexible, version](Result<ProducerIdentity> given) {
                            const Error error = given.ok() ? Error::kNone : txn_error(given.status(), version, 4);
                            services.loop.post([&services, responder, flexible, error,
                                                identity = given.ok() ? *given : ProducerIdentity{}] {
                              services.metrics.error(ApiKey::kInitProducerId, error);
                              responder.send(answer(responder, flexible, error, identity));
                            });
                          });
    });
    return true;
  }
  offload(request, [&services = request.services, responder = request.responder, flexible, current] {
    Result<ProducerIdentity> identity = services.broker.init_producer(current);
    const Error error = identity.ok() ? Error::kNone : from_status(identity.status());
    services.metrics.error(ApiKey::kInitProducerId, error);
    return answer(responder, flexible, error, identity.ok() ? *identity : ProducerIdentity{});
  });
  return true;
}

}  // namespace streamd::kafka
