#include "client/duration.h"

#include "proto/duration_text.h"

namespace streamd::client {

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const duration_text::Parsed parsed = duration_text::parse(text);
  if (parsed.value) return *parsed.value;
  return Error(ErrorCode::kStreamMisconfigured,
               "not a duration: " + std::string(parsed.reason) + " (use e.g. 500ms, 10s, 5m, 2h, 7d, 1h30m)",
               {{"field", "duration"}, {"value", std::string(text)}});
}

std::string format_duration(std::chrono::milliseconds d) { return duration_text::format(d); }

}  // namespace streamd::client
