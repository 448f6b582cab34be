// ListenSpec: one address a server listens on, in plain TCP or — with a TlsContext — in TLS. A server
// may listen on several (tls_listen beside listen) and serves them alike (docs/SECURITY.md §TLS).
#pragma once

#include <memory>

#include "server/config/config.h"

namespace streamd {

class TlsContext;

struct ListenSpec {
  Endpoint at;
  std::shared_ptr<TlsContext> tls;  // null: plain TCP
};

}  // namespace streamd
