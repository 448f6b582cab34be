// SASL PLAIN (RFC 4616): one message, "authzid NUL authcid NUL password". The password travels as
// it is, so PLAIN belongs on a TLS listener (docs/SECURITY.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace streamd::auth {

struct PlainCredentials {
  std::string user;
  std::string password;
};

// nullopt when the message is malformed, names no user, or asks to act as another user (an authzid
// that is neither empty nor the user's own name).
std::optional<PlainCredentials> parse_sasl_plain(std::string_view message);

}  // namespace streamd::auth
