#include "server/auth/access_table.h"

#include "server/auth/crypto.h"

namespace streamd::auth {

const PrincipalEntry* AccessTable::find_token_digest(std::string_view digest) const {
  const PrincipalEntry* found = nullptr;
  for (const PrincipalEntry& e : entries_) {
    if (e.token_digest.empty()) continue;
    if (same_bytes(e.token_digest, digest)) found = &e;
  }
  return found;
}

const PrincipalEntry* AccessTable::find_token(std::string_view token) const {
  return find_token_digest(hash(Digest::kSha256, token));
}

const PrincipalEntry* AccessTable::find(std::string_view name) const {
  for (const PrincipalEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::optional<ScramCredential> AccessTable::scram(std::string_view user, ScramMechanism mechanism) const {
  const PrincipalEntry* e = find(user);
  if (e == nullptr) return std::nullopt;
  for (const ScramCredential& c : e->scram) {
    if (c.mechanism == mechanism) return c;
  }
  return std::nullopt;
}

}  // namespace streamd::auth
