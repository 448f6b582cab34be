// Console logins (docs/HTTP.md §Authentication): a user name and password checked against the
// access file's SCRAM credentials — or a token — turned into a session, whose id travels in a cookie
// the page's script cannot read (HttpOnly) and the browser sends to this site only (SameSite=Strict).
//
// A session keeps the Proof of its login, never a secret: each request resolves it again under the
// access file then in force, so a SIGHUP that removes the user or changes the password ends it. Ids
// are 256 random bits, kept as their SHA-256. Sessions end after kIdle without use or kLifetime in
// all; at most kMaxSessions live, the least recently used giving way.
//
// check_password() runs PBKDF2 (thousands of HMACs): call it off the loop. The store is the loop
// thread's, like the Authenticator.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/auth/access_table.h"
#include "server/auth/authenticator.h"

namespace streamd::http_api {

inline constexpr std::string_view kSessionCookie = "streamd_session";

// The Proof of `user` logging in with `password`: the password whose SCRAM credential the file
// holds (StoredKey = H(HMAC(PBKDF2(password, salt, i), "Client Key"))), or the user's token (as SASL
// PLAIN takes it). Unknown users cost the same work as known ones. nullopt when neither matches.
std::optional<auth::Proof> check_password(const auth::AccessTable& table, std::string_view user,
                                          std::string_view password);

class SessionStore {
 public:
  static constexpr std::chrono::hours kLifetime{12};
  static constexpr std::chrono::minutes kIdle{60};
  static constexpr size_t kMaxSessions = 10000;
  using Clock = std::chrono::steady_clock;

  // A new session's id.
  std::string create(auth::Proof proof, Clock::time_point now = Clock::now());
  // The proof of a live session (and its idle time starts again), or nullopt.
  std::optional<auth::Proof> find(std::string_view id, Clock::time_point now = Clock::now());
  void remove(std::string_view id);
  size_t size() const { return sessions_.size(); }

 private:
  struct Session {
    auth::Proof proof;
    Clock::time_point created;
    Clock::time_point used;
  };
  std::map<std::string, Session, std::less<>> sessions_;  // by the SHA-256 of the id
};

// The value of cookie `name` in a Cookie header, or nullopt.
std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name);

}  // namespace streamd::http_api
