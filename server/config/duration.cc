#include "server/config/duration.h"

#include <array>
#include <limits>
#include <utility>

namespace streamd {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t ms;
};

// Longest suffix first where one is a prefix of another ("ms" before "m").
constexpr std::array<Unit, 5> kDurationUnits{{
    {"ms", 1},
    {"s", 1000},
    {"m", 60 * 1000},
    {"h", 60 * 60 * 1000},
    {"d", 24 * 60 * 60 * 1000},
}};

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
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return std::nullopt;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t total = 0;
  while (!text.empty()) {
    auto number = take_number(text);
    if (!number) return std::nullopt;
    const Unit* unit = nullptr;
    for (const Unit& u : kDurationUnits) {
      if (text.starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return std::nullopt;
    text.remove_prefix(unit->suffix.size());
    const auto scale = static_cast<uint64_t>(unit->ms);
    if (*number > kMax / scale) return std::nullopt;
    const uint64_t term = *number * scale;
    if (term > kMax - total) return std::nullopt;
    total += term;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

std::string format_duration(std::chrono::milliseconds d) {
  int64_t left = d.count();
  if (left <= 0) return "0";
  std::string out;
  for (auto it = kDurationUnits.rbegin(); it != kDurationUnits.rend(); ++it) {
    if (left >= it->ms) {
      out += std::to_string(left / it->ms);
      out += it->suffix;
      left %= it->ms;
    }
  }
  return out;
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
