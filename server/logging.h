// The daemon's logs: spdlog's default logger configured from the config — level, format (text lines or
// one JSON object per line) and destination (standard error, or a file that SIGHUP reopens so log
// rotation can move it away). One line per event worth an operator's attention: start-up, recovery,
// connection errors, shutdown; never one per record.
//
// setup_logging() runs once at start-up, before any other thread logs. reopen_log_file() is safe from
// any thread at any time (it is what the SIGHUP handler calls).
#pragma once

#include <optional>
#include <string>

#include "server/config/config.h"

namespace streamd {

// An error message when the log file cannot be opened.
std::optional<std::string> setup_logging(const Config& config);
// Reopens the log file by name; false when logging goes to standard error or the reopen failed.
bool reopen_log_file();

}  // namespace streamd
