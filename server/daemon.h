// The streamd process from start-up to exit: logs, the network loop thread, the broker and its
// storage threads, the protocol and HTTP listeners, signals and the ordered shutdown.
//
// Start-up: the HTTP listener answers /healthz at once and /readyz 503 while the broker recovers the
// data directory; then the protocol listener opens, /readyz turns 200, the ready file (if asked) gets
// the bound ports, and one summary line is logged. SIGTERM/SIGINT: stop accepting, answer what is in
// flight (appends after their sync), close connections, close the broker, exit 0. SIGHUP reopens the
// log file and reloads the access file and the TLS certificate (docs/SECURITY.md). run_daemon() is called once, from main; it sets up logging, runs the daemon's start-up
// phases in order (operations endpoint and signals, broker recovery, the protocol listener, the ready
// announcement), waits for a stop and stops in reverse; it returns the process exit code.
#pragma once

#include "server/config/config.h"

namespace streamd {

int run_daemon(const StartupOptions& options);

}  // namespace streamd
