#include "client/duration.h"

#include <cstdint>
#include <limits>

namespace streamd::client {
namespace {

Error bad_duration(std::string_view text, std::string reason) {
  return Error(ErrorCode::kStreamMisconfigured,
               "not a duration: " + reason + " (use e.g. 500ms, 10s, 5m, 2h, 7d, 1h30m)",
               {{"field", "duration"}, {"value", std::string(text)}});
}

struct Unit {
  std::string_view suffix;
  int64_t millis;
};

// "ms" before "m" so that the longer suffix wins.
constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};

}  // namespace

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return bad_duration(text, "empty");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9') return bad_duration(text, "expected a digit");
    int64_t number = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (number > (std::numeric_limits<int64_t>::max() - 9) / 10) return bad_duration(text, "too large");
      number = number * 10 + (text[i] - '0');
      ++i;
    }
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(i, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return bad_duration(text, "expected a unit ms, s, m, h or d");
    i += unit->suffix.size();
    if (number > (std::numeric_limits<int64_t>::max() - total) / unit->millis) {
      return bad_duration(text, "too large");
    }
    total += number * unit->millis;
  }
  return std::chrono::milliseconds(total);
}

std::string format_duration(std::chrono::milliseconds d) {
  int64_t rest = d.count();
  if (rest == 0) return "0";
  std::string out;
  if (rest < 0) {
    out = "-";
    rest = -rest;
  }
  constexpr Unit kDescending[] = {{"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};
  for (const Unit& u : kDescending) {
    if (rest >= u.millis) {
      out += std::to_string(rest / u.millis);
      out += u.suffix;
      rest %= u.millis;
    }
  }
  return out;
}

}  // namespace streamd::client
