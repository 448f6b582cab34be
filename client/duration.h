// Durations as people type them (docs/SEMANTICS.md §8): a sequence of <digits><unit> with units ms, s, m, h,
// d, e.g. 500ms, 10s, 5m, 2h, 7d, 1h30m; a bare 0 is zero. Pure functions, safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "client/error.h"

namespace streamd::client {

// STREAM_MISCONFIGURED (field `duration`, value the text) for anything else, a negative sign
// included, or a value past ~292 million years.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// The shortest text parse_duration reads back as `d`: 0, 1h30m, 1d2h, 250ms.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace streamd::client
