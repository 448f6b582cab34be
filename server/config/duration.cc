#include "server/config/duration.h"

#include <array>
#include <limits>
#include <utility>

#include "proto/duration_text.h"

namespace streamd {
namespace {

// Reads the decimal digits at the front of `text`, advancing it; nullopt when none or on overflow.
std::optional<uint64_t> take_number(std::string_view& text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  text.remove_prefix(i);
  return value;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  return duration_text::parse(text).value;
}

std::string format_duration(std::chrono::milliseconds d) {
  // Config values are never negative: parse_duration refuses a sign.
  return duration_text::format(d);
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, uint64_t>, 3> kSuffixes{{
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30},
  }};
  auto number = take_number(text);
  if (!number) return std::nullopt;
  if (text.empty()) return number;
  for (const auto& [suffix, scale] : kSuffixes) {
    if (text == suffix) {
      if (*number > std::numeric_limits<uint64_t>::max() / scale) return std::nullopt;
      return *number * scale;
    }
  }
  return std::nullopt;
}

}  // namespace streamd
