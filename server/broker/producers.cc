// Broker::init_producer and the producers' bounds: idempotent producers' identities come from the
// engine, whose storage alone knows which ids it has handed out (docs/SEMANTICS.md §"Idempotent producers").
#include "server/broker/broker.h"
#include "server/broker/broker_impl.h"

namespace streamd {

Result<ProducerIdentity> Broker::init_producer(std::optional<ProducerIdentity> current) {
  if (current && (current->id < 0 || current->epoch < 0)) {
    return Status(Code::kProtocolError, "a current producer identity has a producer id and an epoch of 0 or more",
                  {{"producer_id", std::to_string(current->id)}, {"epoch", std::to_string(current->epoch)}});
  }
  return impl_->engine->init_producer(current);
}

const ProducerLimits& Broker::producers() const { return impl_->engine->producers(); }

}  // namespace streamd
