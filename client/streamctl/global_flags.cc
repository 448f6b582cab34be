#include "client/streamctl/global_flags.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <mutex>

#include "client/streamctl/duration_flag.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Result;

void add_global_flags(CLI::App& app, GlobalFlags& flags) {
  app.add_option("--broker", flags.broker, "broker address HOST:PORT")
      ->envname("STREAMD_BROKER")
      ->capture_default_str();
  app.add_option("--token", flags.token, "credential sent in Hello")->envname("STREAMD_TOKEN");
  client::TlsOptions& tls = flags.tls;
  app.add_flag("--tls", tls.enabled, "connect with TLS (the broker's tls_listen)")->envname("STREAMD_TLS");
  app.add_option("--ca-file", tls.ca_file,
                 "PEM CAs the broker's certificate must chain to (default: the system's)")
      ->envname("STREAMD_CA_FILE");
  app.add_option("--cert", tls.cert_file, "PEM client certificate (mTLS), with --key")
      ->envname("STREAMD_CERT");
  app.add_option("--key", tls.key_file,
                 "PEM key of --cert (before the command: produce has a --key of its own)")
      ->envname("STREAMD_KEY");
  app.add_option("--server-name", tls.server_name,
                 "the name the broker's certificate must carry (default: the --broker host)")
      ->envname("STREAMD_SERVER_NAME");
  app.add_flag("--json", flags.json, "machine-readable output, one JSON value per line");
  app.add_option("--timeout", flags.timeout, "per-request timeout (500ms, 10s, 5m, 2h, 7d, 1h30m)")
      ->capture_default_str();
}

Result<client::ConnectionOptions> connection_options(const GlobalFlags& flags, bool long_running,
                                                     std::ostream& err) {
  auto timeout = duration_flag(flags.timeout, "timeout");
  if (!timeout.ok()) return timeout.error();
  if (timeout->count() <= 0) {
    return Error(ErrorCode::kStreamMisconfigured, "the timeout must be positive",
                 {{"field", "timeout"}, {"value", flags.timeout}});
  }
  auto broker = client::parse_broker_address(flags.broker);
  if (!broker.ok()) return broker.error();

  client::ConnectionOptions options;
  options.broker = *broker;
  options.token = flags.token;
  options.tls = flags.tls;
  // Any of the TLS options asks for TLS: a CA file given to a plaintext connection would be ignored.
  options.tls.enabled = flags.tls.enabled || !flags.tls.ca_file.empty() || !flags.tls.cert_file.empty() ||
                        !flags.tls.key_file.empty() || !flags.tls.server_name.empty();
  options.client_name = "streamctl";
  options.request_timeout = *timeout;
  if (!long_running) {
    options.fail_when_refused = true;
    return options;
  }
  // The notices come from whichever thread was connecting.
  auto notice_mutex = std::make_shared<std::mutex>();
  options.on_unreachable = [&err, notice_mutex](const Error& error) {
    std::lock_guard lock(*notice_mutex);
    err << "streamctl: " << error.to_string() << "; reconnecting" << std::endl;
  };
  options.on_reachable = [&err, notice_mutex, address = flags.broker] {
    std::lock_guard lock(*notice_mutex);
    err << "streamctl: reconnected to " << address << std::endl;
  };
  return options;
}

}  // namespace streamd::streamctl
