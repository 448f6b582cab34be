// streamctl's global flags, accepted before or after the command (docs/SEMANTICS.md §8): where the
// broker is and how to reach it (--broker, --token, the TLS flags, each also from its STREAMD_*
// environment variable; --timeout) and --json. connection_options() turns them into the client's
// ConnectionOptions. Not thread-safe: one command line at a time.
#pragma once

#include <ostream>
#include <string>

#include "client/broker_address.h"
#include "client/connection.h"
#include "client/error.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace streamd::streamctl {

struct GlobalFlags {
  std::string broker{client::kDefaultBroker};
  std::string token;
  client::TlsOptions tls;
  bool json = false;
  std::string timeout = "10s";
};

// Registers the global flags on `app`, in the order its help lists them.
void add_global_flags(CLI::App& app, GlobalFlags& flags);

// STREAM_MISCONFIGURED for a --timeout that is not a positive duration or a --broker that is not an
// address. A long-running command rides out a broker restart, saying so on `err` once per outage; a
// one-shot command reports a refused connection at once.
client::Result<client::ConnectionOptions> connection_options(const GlobalFlags& flags, bool long_running,
                                                             std::ostream& err);

}  // namespace streamd::streamctl
