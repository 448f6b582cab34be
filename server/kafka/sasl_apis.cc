// SaslHandshake 0-1 and SaslAuthenticate 0-1 (docs/KAFKA.md §Security), offered only where
// kafka.sasl_mechanisms is set. The handshake picks one of the configured mechanisms; v1 carries the
// mechanism's messages in SaslAuthenticate, v0 as bare frames after it (kafka-python). The login
// itself is the connection's (KafkaConnection::sasl_step). Sessions do not expire: there is no
// re-authentication (session_lifetime_ms 0).
#include <algorithm>
#include <string>

#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {

bool handle_sasl_handshake(Request& request) {
  const std::string mechanism(request.body.string());
  if (request.body.failed()) return false;
  const auto& offered = request.services.options.sasl_mechanisms;
  Error error = Error::kUnsupportedSaslMechanism;
  if (std::find(offered.begin(), offered.end(), mechanism) != offered.end()) {
    error = request.responder.connection()->begin_sasl(mechanism, request.version() == 0);
  }
  request.services.metrics.error(ApiKey::kSaslHandshake, error);
  std::string frame = request.responder.start();
  Writer w(frame);
  w.i16(code(error));
  w.array_count(static_cast<int32_t>(offered.size()));
  for (const std::string& m : offered) w.string(m);
  request.responder.send(std::move(frame));
  return true;
}

bool handle_sasl_authenticate(Request& request) {
  const auto bytes = request.body.nullable_bytes();
  if (request.body.failed()) return false;
  SaslSession::Step step = request.responder.connection()->sasl_step(bytes.value_or(std::string_view()));
  const bool failed = step.state == SaslSession::Step::State::kFailed;
  const Error error = failed ? Error::kSaslAuthenticationFailed : Error::kNone;
  request.services.metrics.error(ApiKey::kSaslAuthenticate, error);
  std::string frame = request.responder.start();
  Writer w(frame);
  w.i16(code(error));
  if (failed) {
    // What Kafka says, whatever went wrong: which part of a guess was right is not told.
    w.nullable_string("Authentication failed: invalid credentials or SASL state");
  } else {
    w.nullable_string(std::nullopt);
  }
  w.bytes(step.reply);
  if (request.version() >= 1) w.i64(0);  // session lifetime: none
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
