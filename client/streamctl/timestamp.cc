#include "client/streamctl/timestamp.h"

#include <chrono>
#include <cstdio>

#include "client/duration.h"

namespace streamd::streamctl {
namespace {

// Howard Hinnant's days_from_civil / civil_from_days.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

client::Error bad_time(std::string_view text) {
  return client::Error(client::ErrorCode::kStreamMisconfigured,
                       "not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z) or -DURATION",
                       {{"field", "time"}, {"value", std::string(text)}});
}

bool digits(std::string_view text, size_t pos, size_t count, int* out) {
  if (pos + count > text.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

bool is_leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

}  // namespace

std::string format_rfc3339_us(int64_t micros) {
  const int64_t days = floor_div(micros, 86'400'000'000);
  const int64_t in_day = micros - days * 86'400'000'000;
  int64_t year;
  unsigned month, day;
  civil_from_days(days, &year, &month, &day);
  const int64_t seconds = in_day / 1'000'000;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                static_cast<long long>(year), month, day, static_cast<long long>(seconds / 3600),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60),
                static_cast<long long>(in_day % 1'000'000));
  return buf;
}

client::Result<int64_t> parse_rfc3339_us(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (!digits(text, 0, 4, &year) || text.size() < 20 || text[4] != '-' || !digits(text, 5, 2, &month) ||
      text[7] != '-' || !digits(text, 8, 2, &day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(text, 11, 2, &hour) || text[13] != ':' || !digits(text, 14, 2, &minute) || text[16] != ':' ||
      !digits(text, 17, 2, &second)) {
    return bad_time(text);
  }
  if (month < 1 || month > 12 || day < 1 || static_cast<unsigned>(day) > days_in_month(year, month) ||
      hour > 23 || minute > 59 || second > 59) {
    return bad_time(text);
  }
  size_t pos = 19;
  int64_t fraction_us = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int count = 0;
    int64_t scale = 100'000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (count < 6) fraction_us += (text[pos] - '0') * scale;
      scale /= 10;
      ++count;
      ++pos;
    }
    if (count == 0 || count > 9) return bad_time(text);
  }
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!digits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(text, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return bad_time(text);
    }
    offset_s = (oh * 3600 + om * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad_time(text);
  }
  if (pos != text.size()) return bad_time(text);
  const int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return seconds * 1'000'000 + fraction_us;
}

client::Result<int64_t> parse_time_us(std::string_view text, int64_t now) {
  if (!text.empty() && text.front() == '-') {
    auto d = client::parse_duration(text.substr(1));
    if (!d.ok()) return bad_time(text);
    return now - d->count() * 1000;
  }
  return parse_rfc3339_us(text);
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace streamd::streamctl
