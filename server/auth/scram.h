// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the server's side of the exchange, and the
// stored form of a password. The broker keeps only a credential — salt, iteration count, StoredKey
// and ServerKey — from which the password cannot be recovered, and checks the client's proof against
// it; its final message proves to the client that the server knew the credential. No channel
// binding (the gs2 flag must be "n" or "y"). Pure computation, no I/O; a ScramServer is used by one
// connection at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/auth/crypto.h"

namespace streamd::auth {

enum class ScramMechanism { kSha256, kSha512 };

// "SCRAM-SHA-256" / "SCRAM-SHA-512".
std::string_view scram_mechanism_name(ScramMechanism m);
std::optional<ScramMechanism> parse_scram_mechanism(std::string_view name);
Digest scram_digest(ScramMechanism m);

// RFC 7677's minimum, and what credentials are made with unless asked otherwise.
inline constexpr uint32_t kMinScramIterations = 4096;

struct ScramCredential {
  ScramMechanism mechanism = ScramMechanism::kSha256;
  uint32_t iterations = kMinScramIterations;
  std::string salt;        // raw bytes
  std::string stored_key;  // H(ClientKey)
  std::string server_key;  // HMAC(SaltedPassword, "Server Key")
};

// The credential of `password` (used as is: no SASLprep, so non-ASCII passwords must be sent in the
// same normalisation they were stored in).
ScramCredential make_scram_credential(ScramMechanism m, std::string_view password, std::string_view salt,
                                      uint32_t iterations);

class ScramServer {
 public:
  // The credential of a user, or nullopt when there is none; called once, with the first message.
  using Lookup = std::function<std::optional<ScramCredential>(std::string_view user)>;

  enum class State { kContinue, kDone, kFailed };
  struct Step {
    State state = State::kFailed;
    std::string reply;   // the server message to send back (kContinue and kDone)
    std::string reason;  // why it failed, for the log; never names the password or the proof
  };

  // `server_nonce` is the server's part of the exchange's nonce: random when empty, as it must be in
  // use (a fixed one lets tests replay the RFC's exchanges).
  ScramServer(ScramMechanism mechanism, Lookup lookup, std::string server_nonce = {});

  // Feeds the next client message: client-first, then client-final.
  Step step(std::string_view message);
  // The authenticated user once step() returned kDone; before that the name the client claimed.
  const std::string& user() const { return user_; }

 private:
  Step first(std::string_view message);
  Step final(std::string_view message);

  const ScramMechanism mechanism_;
  Lookup lookup_;
  const std::string server_nonce_;
  enum class Phase { kFirst, kFinal, kOver } phase_ = Phase::kFirst;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string client_nonce_;
  std::string nonce_;  // the client's nonce, then the server's
  ScramCredential credential_;
  bool known_user_ = false;
};

}  // namespace streamd::auth
