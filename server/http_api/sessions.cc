#include "server/http_api/sessions.h"

#include "server/auth/crypto.h"
#include "server/auth/scram.h"

namespace streamd::http_api {
namespace {

std::string stored_key_of(const auth::ScramCredential& c, std::string_view password) {
  const auth::Digest d = auth::scram_digest(c.mechanism);
  const std::string salted = auth::pbkdf2(d, password, c.salt, c.iterations);
  return auth::hash(d, auth::hmac(d, salted, "Client Key"));
}

std::string id_key(std::string_view id) { return auth::hash(auth::Digest::kSha256, id); }

}  // namespace

std::optional<auth::Proof> check_password(const auth::AccessTable& table, std::string_view user,
                                          std::string_view password) {
  const auth::PrincipalEntry* entry = table.find(user);
  if (entry != nullptr && !entry->scram.empty()) {
    // The strongest credential the user has is checked; one is enough.
    const auth::ScramCredential* best = &entry->scram.front();
    for (const auth::ScramCredential& c : entry->scram) {
      if (c.mechanism == auth::ScramMechanism::kSha512) best = &c;
    }
    if (auth::same_bytes(stored_key_of(*best, password), best->stored_key)) {
      auth::Proof proof;
      proof.kind = auth::Proof::Kind::kSasl;
      proof.name = entry->name;
      proof.credential = best->stored_key;
      return proof;
    }
  } else {
    // The same work for a user without SCRAM credentials, or none at all.
    static const auth::ScramCredential decoy =
        auth::make_scram_credential(auth::ScramMechanism::kSha512, "", std::string(16, 'x'), auth::kMinScramIterations);
    (void)auth::same_bytes(stored_key_of(decoy, password), decoy.stored_key);
  }
  const std::string digest = auth::hash(auth::Digest::kSha256, password);
  const std::string& known =
      entry != nullptr && !entry->token_digest.empty() ? entry->token_digest : std::string(32, '\0');
  if (entry == nullptr || entry->token_digest.empty() || !auth::same_bytes(known, digest)) return std::nullopt;
  auth::Proof proof;
  proof.kind = auth::Proof::Kind::kSasl;
  proof.name = entry->name;
  proof.credential = digest;
  return proof;
}

std::string SessionStore::create(auth::Proof proof, Clock::time_point now) {
  std::erase_if(sessions_, [&](const auto& s) {
    return now - s.second.created > kLifetime || now - s.second.used > kIdle;
  });
  if (sessions_.size() >= kMaxSessions) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
    }
    sessions_.erase(oldest);
  }
  std::string id = auth::hex_encode(auth::random_bytes(32));
  sessions_.insert_or_assign(id_key(id), Session{std::move(proof), now, now});
  return id;
}

std::optional<auth::Proof> SessionStore::find(std::string_view id, Clock::time_point now) {
  auto it = sessions_.find(id_key(id));
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.created > kLifetime || now - it->second.used > kIdle) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.used = now;
  return it->second.proof;
}

void SessionStore::remove(std::string_view id) { sessions_.erase(id_key(id)); }

std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header.remove_prefix(semi == std::string_view::npos ? header.size() : semi + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
  }
  return std::nullopt;
}

}  // namespace streamd::http_api
