// InitProducerId 0-4 (docs/KAFKA.md §Idempotent producers): an idempotent producer's identity from the
// broker's engine (StreamEngine::init_producer), the same one native producers get. From v3 a producer
// names its current identity to bump its epoch after a fault (KIP-360), which librdkafka needs to go
// on instead of turning fatal. Allocation may sync a block of ids or ask the database, so it runs on
// the blocking executor. A transactional id needs the transaction coordinator (FindCoordinator answers
// none for key type 1): COORDINATOR_NOT_AVAILABLE.
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
  r.i32();  // transaction timeout: transactions only
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
    request.services.metrics.error(ApiKey::kInitProducerId, Error::kCoordinatorNotAvailable);
    request.responder.send(answer(request.responder, flexible, Error::kCoordinatorNotAvailable, {}));
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
