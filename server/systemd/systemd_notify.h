// The service side of systemd's notification protocol (sd_notify(3)), spoken directly: one datagram
// of newline-separated VAR=VALUE assignments to the AF_UNIX socket named by $NOTIFY_SOCKET — a path,
// or an abstract socket when it starts with '@'. No libsystemd: the protocol is a single sendto().
//
// Under `Type=notify` (deploy/streamd.service) systemd considers streamd started only on READY=1, so
// the daemon sends it after recovery has finished and both listeners are bound; STOPPING=1 when
// SIGTERM starts the drain; WATCHDOG=1 from its network loop at half of watchdog_interval(), so a
// wedged loop gets the service restarted.
//
// Without $NOTIFY_SOCKET (not under systemd, in a container, in tests) every call is a no-op that
// returns ok. A failure to send is STREAM_BACKEND_FAILED with the socket path and errno; the caller
// logs it and carries on, since the broker works without its supervisor hearing from it.
//
// Thread-safety: every function may be called from any thread; each send uses its own socket. They
// read the environment, so nothing may setenv() concurrently (true of any getenv()).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "server/storage/status.h"

namespace streamd::systemd {

// Sends `state`, one or more "VAR=VALUE" lines, as one datagram.
Status notify(std::string_view state);

// READY=1: start-up (recovery and listening) is complete.
Status notify_ready();
// STOPPING=1: shutdown has begun.
Status notify_stopping();
// WATCHDOG=1: the service is alive.
Status notify_watchdog();
// STATUS=text: one line `systemctl status` shows.
Status notify_status(std::string_view text);

// The watchdog timeout systemd enforces (WatchdogSec=, passed as $WATCHDOG_USEC), when it applies to
// this process ($WATCHDOG_PID unset or equal to getpid()); nullopt when the watchdog is off or the
// variables do not parse. Send notify_watchdog() at least every half of it.
std::optional<std::chrono::microseconds> watchdog_interval();

}  // namespace streamd::systemd
