// Access tokens (docs/OPERATIONS.md, "Access tokens"). With auth.token_file set, a connection's Hello
// must carry one of the file's tokens, or it is answered UNAUTHENTICATED and closed; each token grants
// one access level, and a request beyond it is answered PERMISSION_DENIED. Without a token file every
// connection may do everything, as on a broker that only listens on loopback.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/storage/status.h"
#include "streamd.pb.h"

namespace streamd {

// Each level allows what the one before it does, and more.
enum class Access {
  kRead,   // read, bounds, peek, offset lookups, list, describe, health; commit a group's progress
  kWrite,  // and append (which may auto-create a stream with the default policy)
  kAdmin,  // and create, delete, trim and compact
};

std::string_view access_name(Access access);
bool permits(Access access, v1::Request::BodyCase kind);

// The tokens of a token file: lines "ACCESS TOKEN", '#' comments and blank lines skipped.
class TokenTable {
 public:
  // STREAM_MISCONFIGURED naming the line on a bad line, an unknown access or a repeated token.
  static Result<TokenTable> parse(std::string_view text);
  // Reads and parses `path`; refuses a file that group or others may read or write.
  static Result<TokenTable> load(const std::string& path);

  // The access `token` grants, if any. Compares every entry in full, in time that does not depend on
  // where the token differs, so answers do not leak how much of a guess was right.
  std::optional<Access> find(std::string_view token) const;
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, Access>> entries_;
};

// What the loop checks Hellos against: the current token table, replaced whole on reload. Every
// connection remembers the generation it was admitted under and checks its token again after a
// reload, so a token removed from the file stops working on open connections too.
// Loop thread only.
class Authenticator {
 public:
  bool enabled() const { return table_ != nullptr; }
  uint64_t generation() const { return generation_; }
  // Access for a Hello's token: everything when disabled, nullopt for an unknown token.
  std::optional<Access> admit(std::string_view token) const;
  void replace(std::shared_ptr<const TokenTable> table);

 private:
  std::shared_ptr<const TokenTable> table_;
  uint64_t generation_ = 0;
};

}  // namespace streamd
