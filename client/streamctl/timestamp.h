// RFC 3339 timestamps for streamctl: entries print their appended_at in UTC with microseconds
// (2026-11-29T09:07:11.123456Z), and `consume --from @…` / `seek --time …` read any RFC 3339 instant
// (Z or a ±hh:mm offset, 0–9 fractional digits) or, after "-", a duration before now. Pure
// functions, safe from any thread; the proleptic Gregorian calendar, no leap seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/error.h"

namespace streamd::streamctl {

std::string format_rfc3339_us(int64_t micros_since_epoch);

// STREAM_MISCONFIGURED (field `time`) for anything that is not RFC 3339.
client::Result<int64_t> parse_rfc3339_us(std::string_view text);

// An RFC 3339 instant, or "-DURATION" meaning that long before `now_us`.
client::Result<int64_t> parse_time_us(std::string_view text, int64_t now_us);

int64_t now_us();

}  // namespace streamd::streamctl
