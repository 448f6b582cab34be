// A flag that takes a duration (500ms, 10s, 5m, 2h, 7d, 1h30m), read once the command runs so that a
// bad one is refused as STREAM_MISCONFIGURED naming the flag and the text given.
#pragma once

#include <chrono>
#include <string>

#include "client/error.h"

namespace streamd::streamctl {

client::Result<std::chrono::milliseconds> duration_flag(const std::string& text, const char* field);

}  // namespace streamd::streamctl
