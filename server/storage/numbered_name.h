// Files named by a number: 20 zero-padded decimal digits and a suffix, so that a directory listing
// sorts them in order (segments by base offset, journal files by sequence; docs/FORMAT.md).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::numbered_name {

inline std::string stem(uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020" PRIu64, n);
  return buf;
}

// The number of `name` when it is 20 digits followed by `suffix`, else nullopt.
inline std::optional<uint64_t> parse(std::string_view name, std::string_view suffix) {
  if (name.size() != 20 + suffix.size() || name.substr(20) != suffix) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(name[i] - '0');
    // Twenty digits reach past 2^64 - 1; such a name is not a number wrapped around.
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

}  // namespace streamd::numbered_name
