// SaslSession: one Kafka connection's SASL login (docs/KAFKA.md §Security) — the mechanism SaslHandshake
// chose, then the client's messages (SaslAuthenticate's auth_bytes, or bare frames after a v0
// handshake) until the login proves a principal of the access file or fails. PLAIN checks the user's
// token; SCRAM-SHA-256/512 run the exchange of server/auth/scram.h against the user's stored
// credential. Loop thread only (it reads the Authenticator).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/auth/authenticator.h"
#include "server/auth/scram.h"

namespace streamd::kafka {

class SaslSession {
 public:
  // `mechanism` is one of the configured ones (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
  SaslSession(std::string mechanism, const auth::Authenticator& auth);

  struct Step {
    enum class State { kContinue, kDone, kFailed };
    State state = State::kFailed;
    std::string reply;  // the server's message, for kContinue and kDone
    std::string reason;  // kFailed, for the log: never a password
    std::optional<auth::Proof> proof;  // kDone
  };
  Step step(std::string_view message);

  const std::string& mechanism() const { return mechanism_; }
  // The user the client named, once it has (for the log).
  const std::string& user() const { return user_; }

 private:
  Step plain(std::string_view message);
  Step scram(std::string_view message);

  const std::string mechanism_;
  const auth::Authenticator& auth_;
  std::unique_ptr<auth::ScramServer> scram_;
  std::string user_;
  bool over_ = false;
};

}  // namespace streamd::kafka
