// The duration grammar of docs/SEMANTICS.md §8, which streamctl's flags and streamd's config both read: one
// or more <digits><unit> terms, unit ms, s, m, h or d ("500ms", "10s", "1h30m", "7d"); a bare "0" is
// zero. Defined once, here, for both (header-only, no protobuf, like placement.h). Pure functions,
// safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::duration_text {

struct Unit {
  std::string_view suffix;
  int64_t millis;
};

// "ms" before "m", so that the longer suffix wins.
inline constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};

// The duration `text` spells, or, when it spells none, why (`reason`, for an error message). Signs,
// spaces, fractions, a number without a unit and a total past int64 milliseconds spell none.
struct Parsed {
  std::optional<std::chrono::milliseconds> value;
  std::string_view reason;
};

inline Parsed parse(std::string_view text) {
  if (text == "0") return {std::chrono::milliseconds(0), {}};
  if (text.empty()) return {std::nullopt, "empty"};
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9') return {std::nullopt, "expected a digit"};
    uint64_t number = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      const auto digit = static_cast<uint64_t>(text[i] - '0');
      if (number > (kMax - digit) / 10) return {std::nullopt, "too large"};
      number = number * 10 + digit;
    }
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(i).starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return {std::nullopt, "expected a unit ms, s, m, h or d"};
    i += unit->suffix.size();
    const auto scale = static_cast<uint64_t>(unit->millis);
    if (number > (kMax - total) / scale) return {std::nullopt, "too large"};
    total += number * scale;
  }
  return {std::chrono::milliseconds(static_cast<int64_t>(total)), {}};
}

// The shortest text parse() reads back as `d` ("0", "1h30m", "1d2h", "250ms"); a negative duration,
// which parse() never returns, prints with a leading '-'.
inline std::string format(std::chrono::milliseconds d) {
  const int64_t count = d.count();
  if (count == 0) return "0";
  std::string out = count < 0 ? "-" : "";
  uint64_t rest = count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it) {
    const auto scale = static_cast<uint64_t>(it->millis);
    if (rest >= scale) {
      out += std::to_string(rest / scale);
      out += it->suffix;
      rest %= scale;
    }
  }
  return out;
}

}  // namespace streamd::duration_text
