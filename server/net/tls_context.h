// TlsContext: the TLS identity and policy every TLS listener serves (docs/SECURITY.md §TLS) — the
// certificate chain and key, TLS 1.2 or 1.3 at the least, forward-secret AEAD cipher suites, and
// client certificates checked against tls.client_ca_file when tls.client_auth asks for them.
//
// reload() (SIGHUP) reads the files again into a new OpenSSL context: connections accepted from then
// on get the new certificate, while those already open keep the context they were accepted with
// until they close — nothing is dropped. A reload that fails (a missing file, a key that does not
// match its certificate) changes nothing and says why.
//
// Threading: load() anywhere; reload(), current() and describe() on the network loop's thread. Asio's
// SSL headers stay out of this header.
#pragma once

#include <memory>
#include <string>

#include "server/config/config.h"
#include "server/storage/status.h"

namespace asio::ssl {
class context;
}

namespace streamd {

class TlsContext {
 public:
  // STREAM_MISCONFIGURED naming the key (field) and OpenSSL's reason when a file cannot be used.
  static Result<std::shared_ptr<TlsContext>> load(const TlsConfig& config);

  Status reload();
  // The context new connections are accepted with.
  std::shared_ptr<asio::ssl::context> current() const { return current_; }
  // "subject CN=…, issuer CN=…, valid until …" of the certificate served now, for the log.
  const std::string& describe() const { return description_; }
  // True when the certificate served now is past its notAfter (logged at load and reload).
  bool expired() const { return expired_; }

 private:
  explicit TlsContext(TlsConfig config) : config_(std::move(config)) {}
  Status build();

  const TlsConfig config_;
  std::shared_ptr<asio::ssl::context> current_;
  std::string description_;
  bool expired_ = false;
};

}  // namespace streamd
