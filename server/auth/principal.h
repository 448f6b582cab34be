// Principal: who a connection is, and what its grants let it do (docs/SECURITY.md §Rights). Without an
// access file every connection is unrestricted, as on a broker that only listens on loopback; with
// one, a connection is the principal its token, its client certificate or its SASL login names, and
// may do exactly what that principal's grants say — or, proven by nothing, nothing. A value type:
// it keeps the table it was resolved against alive, so it stays valid across a reload.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "server/auth/access_table.h"
#include "server/auth/rights.h"

namespace streamd::auth {

class Principal {
 public:
  // No access file: every right on every stream.
  static Principal unrestricted();
  // With an access file, a connection that proved nothing.
  static Principal anonymous(std::shared_ptr<const AccessTable> table);
  // `entry` may be null: a certificate subject the file grants nothing.
  static Principal of(std::shared_ptr<const AccessTable> table, std::string name, const PrincipalEntry* entry);

  // For errors and logs: the principal's name or certificate subject, "anonymous", or "" when
  // unrestricted. Never a secret.
  const std::string& name() const { return name_; }
  bool restricted() const { return table_ != nullptr; }
  bool anonymous() const { return anonymous_; }

  bool allows(Right right, std::string_view stream) const;
  // Any right at all on `stream` (describing it, or seeing it in Kafka's Metadata).
  bool allows_any(std::string_view stream) const;
  // A right on some stream or other: Kafka's group APIs ask this of consumers.
  bool holds_anywhere(Right right) const;
  // A right on every stream, by a grant of "*": what the HTTP /metrics endpoint asks.
  bool holds_everywhere(Right right) const;

 private:
  static constexpr std::string_view kAnonymous = "anonymous";
  std::shared_ptr<const AccessTable> table_;
  std::string name_;
  const PrincipalEntry* entry_ = nullptr;
  bool anonymous_ = false;
};

}  // namespace streamd::auth
