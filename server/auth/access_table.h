// AccessTable: the access file (auth.token_file, docs/SECURITY.md §The access file) as the broker
// uses it — each principal with its token's SHA-256 digest, its SCRAM credentials and its grants of
// rights on stream patterns. Certificate subjects that grants name are principals too, with no
// secret: TLS proved them. Built once by parse() or load() and then only read, so one table may be
// shared by every connection and thread; a reload builds a new one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth/rights.h"
#include "server/auth/scram.h"
#include "server/auth/stream_pattern.h"
#include "server/storage/status.h"

namespace streamd::auth {

struct Grant {
  StreamPattern pattern;
  Rights rights;
};

struct PrincipalEntry {
  std::string name;          // a principal name, or a certificate subject ("CN=ops,O=Example")
  std::string token_digest;  // SHA-256 of its token, raw; empty: none
  std::vector<ScramCredential> scram;
  std::vector<Grant> grants;
};

class AccessTable {
 public:
  // The file's text (grammar in docs/SECURITY.md); STREAM_MISCONFIGURED naming the line otherwise.
  static Result<AccessTable> parse(std::string_view text);
  // Reads and parses `path`; refuses a file that group or others may read or write.
  static Result<AccessTable> load(const std::string& path);

  // The principal whose token has this SHA-256 digest. Compares with every token in full, in time that
  // does not depend on where a guess differs, so answers do not leak how much of it was right.
  const PrincipalEntry* find_token_digest(std::string_view digest) const;
  const PrincipalEntry* find_token(std::string_view token) const;
  // By name (a principal or a certificate subject); nullptr when the file never names it.
  const PrincipalEntry* find(std::string_view name) const;
  std::optional<ScramCredential> scram(std::string_view user, ScramMechanism mechanism) const;

  size_t size() const { return entries_.size(); }
  // Every principal, in the file's order (Kafka's DescribeAcls maps their grants onto ACLs).
  const std::vector<PrincipalEntry>& entries() const { return entries_; }
  // Tokens written in clear, in the file format from before digests (each "ACCESS TOKEN" line).
  size_t clear_text_tokens() const { return clear_text_tokens_; }

 private:
  friend class AccessFileParser;
  std::vector<PrincipalEntry> entries_;
  size_t clear_text_tokens_ = 0;
};

}  // namespace streamd::auth
