// Parsing and printing of the human units the config and flags accept.
//
// Durations: one or more <integer><unit> terms, unit one of ms, s, m, h, d ("500ms", "10s", "1h30m",
// "7d"); a bare "0" is zero. Byte sizes: an integer with an optional KiB, MiB or GiB suffix ("64MiB").
// Both refuse negatives, overflow and trailing garbage, so a typo stops start-up instead of becoming
// some other number. Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace streamd {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// The shortest spelling parse_duration reads back to the same value ("1h30m", "0").
std::string format_duration(std::chrono::milliseconds d);

std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace streamd
