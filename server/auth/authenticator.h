// Authenticator: the access table a listener checks connections against, replaced whole when SIGHUP
// reloads the file, and the rules that turn what a connection proved into a Principal.
//
// A connection keeps its Proof (never the secret itself: a token is kept as its digest) and the
// generation it was resolved under; after a reload it is resolved again, so a token removed from the
// file stops working on open connections, and changed grants apply to them at their next request.
//
// Threading: the network loop's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/auth/access_table.h"
#include "server/auth/principal.h"

namespace streamd::auth {

// How a connection proved who it is.
struct Proof {
  enum class Kind { kNothing, kToken, kCertificate, kSasl };
  Kind kind = Kind::kNothing;
  std::string name;        // the certificate subject, or the SASL user
  std::string credential;  // kToken: the token's SHA-256; kSasl: the credential it was checked
                           // against (the token's digest for PLAIN, the StoredKey for SCRAM)

  static Proof token(std::string_view token);
  static Proof certificate(std::string subject);
};

class Authenticator {
 public:
  bool enabled() const { return table_ != nullptr; }
  uint64_t generation() const { return generation_; }
  const std::shared_ptr<const AccessTable>& table() const { return table_; }
  void replace(std::shared_ptr<const AccessTable> table);

  // The principal `proof` stands for under the current table; nullopt when it no longer stands for
  // any (an unknown or revoked token, a SASL user whose credential changed). Unrestricted when the
  // authenticator is disabled; anonymous for kNothing.
  std::optional<Principal> resolve(const Proof& proof) const;

  // SASL PLAIN: the user's token must be `password`. The Proof to keep, or nullopt.
  std::optional<Proof> check_plain(std::string_view user, std::string_view password) const;
  // SCRAM: the user's credential for `mechanism`, for a ScramServer's lookup.
  std::optional<ScramCredential> scram(std::string_view user, ScramMechanism mechanism) const;

 private:
  std::shared_ptr<const AccessTable> table_;
  uint64_t generation_ = 0;
};

}  // namespace streamd::auth
