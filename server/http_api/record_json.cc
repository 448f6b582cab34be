#include "server/http_api/record_json.h"

#include <charconv>
#include <cstdio>
#include <optional>

#include "proto/duration_text.h"
#include "server/auth/crypto.h"
#include "server/http_api/api_call.h"

namespace streamd::http_api {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's algorithms).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2 ? 1 : 0;
}

bool digits(std::string_view text, size_t at, size_t n, unsigned& out) {
  if (at + n > text.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return true;
}

void text_or_null(JsonWriter& w, std::string_view name, std::string_view bytes) {
  w.key(name);
  if (is_valid_utf8(bytes)) {
    w.string(bytes);
  } else {
    w.null();
  }
}

// The bytes of `name` or `name_b64` in `o`; exactly one may be given, neither means empty.
Result<std::string> text_or_base64(const JsonValue& o, std::string_view name, const std::string& where) {
  const JsonValue* text = o.get(name);
  const JsonValue* b64 = o.get(std::string(name) + "_b64");
  if (text != nullptr && !text->is_null() && b64 != nullptr && !b64->is_null()) {
    return bad_argument(where + "." + std::string(name), "give " + std::string(name) + " or " + std::string(name) +
                                                             "_b64, not both");
  }
  if (b64 != nullptr && !b64->is_null()) {
    if (!b64->is_string()) return bad_argument(where + "." + std::string(name) + "_b64", "must be a string");
    auto bytes = auth::base64_decode(b64->text());
    if (!bytes) return bad_argument(where + "." + std::string(name) + "_b64", "is not padded standard base64");
    return std::move(*bytes);
  }
  if (text != nullptr && !text->is_null()) {
    if (!text->is_string()) return bad_argument(where + "." + std::string(name), "must be a string");
    return text->text();
  }
  return std::string();
}

Result<int64_t> non_negative(const JsonValue& v, std::string_view field) {
  auto n = v.as_i64();
  if (!n || *n < 0) return bad_argument(field, std::string(field) + " must be a non-negative integer");
  return *n;
}

Result<std::chrono::milliseconds> duration_field(const JsonValue& policy, std::string_view name,
                                                 std::chrono::milliseconds fallback) {
  const std::string ms_name = std::string(name) + "_ms";
  if (const JsonValue* ms = policy.get(ms_name)) {
    auto n = non_negative(*ms, ms_name);
    if (!n.ok()) return n.status();
    return std::chrono::milliseconds(*n);
  }
  if (const JsonValue* text = policy.get(name)) {
    if (text->type() == JsonValue::Type::kNumber) {
      return bad_argument(name, std::string(name) + " is a duration such as \"7d\"; milliseconds go in " + ms_name);
    }
    if (!text->is_string()) return bad_argument(name, std::string(name) + " must be a duration such as \"7d\"");
    const auto parsed = duration_text::parse(text->text());
    if (!parsed.value) {
      return bad_argument(name, std::string(name) + " is not a duration (" + std::string(parsed.reason) + ")");
    }
    return *parsed.value;
  }
  return fallback;
}

}  // namespace

std::string format_time(int64_t micros) {
  const int64_t seconds = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  const auto frac = static_cast<unsigned>(micros - seconds * 1000000);
  const int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  const auto in_day = static_cast<unsigned>(seconds - days * 86400);
  int64_t y = 0;
  unsigned m = 0;
  unsigned d = 0;
  civil_from_days(days, y, m, d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02u:%02u:%02u.%06uZ", static_cast<long long>(y), m, d,
                in_day / 3600, in_day / 60 % 60, in_day % 60, frac);
  return buf;
}

Result<int64_t> parse_time(std::string_view field, std::string_view t) {
  const Status bad = bad_argument(field, std::string(field) + " is not an RFC 3339 time (2026-11-29T10:02:17Z)");
  unsigned year = 0;
  unsigned month = 0;
  unsigned day = 0;
  unsigned hour = 0;
  unsigned minute = 0;
  unsigned second = 0;
  if (!digits(t, 0, 4, year) || t.size() < 20 || t[4] != '-' || !digits(t, 5, 2, month) || t[7] != '-' ||
      !digits(t, 8, 2, day) || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits(t, 11, 2, hour) ||
      t[13] != ':' || !digits(t, 14, 2, minute) || t[16] != ':' || !digits(t, 17, 2, second)) {
    return bad;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return bad;
  size_t i = 19;
  int64_t micros = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    size_t n = 0;
    int64_t scale = 100000;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 6) micros += (t[i] - '0') * scale;
      scale /= 10;
      ++n;
      ++i;
    }
    if (n == 0 || n > 9) return bad;
  }
  int64_t offset_s = 0;
  if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
    ++i;
  } else if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
    unsigned oh = 0;
    unsigned om = 0;
    if (!digits(t, i + 1, 2, oh) || i + 3 >= t.size() || t[i + 3] != ':' || !digits(t, i + 4, 2, om) || oh > 23 ||
        om > 59) {
      return bad;
    }
    offset_s = (t[i] == '+' ? 1 : -1) * static_cast<int64_t>(oh * 3600 + om * 60);
    i += 6;
  } else {
    return bad;
  }
  if (i != t.size()) return bad;
  const int64_t days = days_from_civil(year, month, day);
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + std::min(second, 59u) - offset_s;
  return seconds * 1000000 + micros;
}

void write_entry(JsonWriter& w, PartitionId partition, const EntryView& e) {
  w.begin_object()
      .field("partition", partition.value)
      .field("offset", e.offset.value)
      .field("appended_at", format_time(e.appended_at.micros));
  // The producer's own timestamp, kept for records produced with one (a Kafka producer's CreateTime).
  if (e.create_time) w.field("create_time", format_time(e.create_time->millis * 1000));
  text_or_null(w, "key", e.key);
  text_or_null(w, "payload", e.payload);
  w.field("key_b64", auth::base64_encode(e.key)).field("payload_b64", auth::base64_encode(e.payload));
  w.key("headers").begin_array();
  for (const HeaderView& h : e.headers) {
    w.begin_object().field("name", h.name);
    text_or_null(w, "value", h.value);
    w.field("value_b64", auth::base64_encode(h.value)).end_object();
  }
  w.end_array().end_object();
}

Result<DecodedRecords> decode_records(const JsonValue& body) {
  const JsonValue* records = body.get("records");
  if (records == nullptr || !records->is_array()) {
    return bad_argument("records", "the body must be {\"records\":[…]}, one object per record");
  }
  DecodedRecords out;
  out.records.reserve(records->items().size());
  size_t index = 0;
  for (const JsonValue& r : records->items()) {
    const std::string where = "records[" + std::to_string(index++) + "]";
    if (!r.is_object()) return bad_argument(where, where + " must be an object");
    for (const auto& [name, value] : r.members()) {
      if (name != "key" && name != "key_b64" && name != "payload" && name != "payload_b64" && name != "headers") {
        return bad_argument(where + "." + name, "unknown field " + name + " in a record");
      }
    }
    Record record;
    auto key = text_or_base64(r, "key", where);
    if (!key.ok()) return key.status();
    auto payload = text_or_base64(r, "payload", where);
    if (!payload.ok()) return payload.status();
    record.key = std::move(*key);
    record.payload = std::move(*payload);
    if (const JsonValue* headers = r.get("headers"); headers != nullptr && !headers->is_null()) {
      if (!headers->is_array()) return bad_argument(where + ".headers", "must be an array of {name, value}");
      size_t h = 0;
      for (const JsonValue& header : headers->items()) {
        const std::string hwhere = where + ".headers[" + std::to_string(h++) + "]";
        const JsonValue* name = header.get("name");
        if (name == nullptr || !name->is_string() || name->text().empty()) {
          return bad_argument(hwhere + ".name", "a header needs a non-empty name");
        }
        auto value = text_or_base64(header, "value", hwhere);
        if (!value.ok()) return value.status();
        record.headers.emplace_back(name->text(), std::move(*value));
      }
    }
    out.records.push_back(std::move(record));
  }
  out.inputs.reserve(out.records.size());
  for (const Record& r : out.records) {
    RecordInput in{r.key, r.payload, {}};
    for (const auto& [name, value] : r.headers) in.headers.push_back(HeaderView{name, value});
    out.inputs.push_back(std::move(in));
  }
  return out;
}

void write_policy(JsonWriter& w, const Policy& p) {
  w.begin_object()
      .field("partitions", p.partitions)
      .field("max_record_bytes", p.max_record_bytes)
      .field("retain_for_ms", static_cast<int64_t>(p.retain_for.count()))
      .field("retain_bytes", p.retain_bytes)
      .field("max_bytes", p.max_bytes)
      .field("block_timeout_ms", static_cast<int64_t>(p.block_timeout.count()))
      .field("segment_bytes", p.segment_bytes)
      .field("compact_after_ms", static_cast<int64_t>(p.compact_after.count()))
      .field("timestamp_type", timestamp_type_name(p.timestamp_type))
      .end_object();
}

Result<Policy> decode_policy(const JsonValue* policy) {
  Policy p;
  if (policy == nullptr || policy->is_null()) return p;
  if (!policy->is_object()) return bad_argument("policy", "policy must be an object");
  static constexpr std::string_view kKnown[] = {
      "partitions",    "max_record_bytes", "retain_for",    "retain_for_ms",    "retain_bytes", "max_bytes",
      "block_timeout", "block_timeout_ms", "segment_bytes", "compact_after", "compact_after_ms",
      "timestamp_type"};
  for (const auto& [name, value] : policy->members()) {
    bool known = false;
    for (std::string_view k : kKnown) known = known || name == k;
    if (!known) return bad_argument(name, "unknown policy field " + name);
  }
  auto integer = [&](std::string_view name, int64_t& out) -> Status {
    if (const JsonValue* v = policy->get(name)) {
      auto n = non_negative(*v, name);
      if (!n.ok()) return n.status();
      out = *n;
    }
    return Status();
  };
  int64_t partitions = 0;
  STREAMD_RETURN_IF_ERROR(integer("partitions", partitions));
  if (partitions > (1 << 20)) return bad_argument("partitions", "partitions is too large");
  p.partitions = static_cast<int32_t>(partitions);
  STREAMD_RETURN_IF_ERROR(integer("max_record_bytes", p.max_record_bytes));
  STREAMD_RETURN_IF_ERROR(integer("retain_bytes", p.retain_bytes));
  STREAMD_RETURN_IF_ERROR(integer("max_bytes", p.max_bytes));
  STREAMD_RETURN_IF_ERROR(integer("segment_bytes", p.segment_bytes));
  auto retain_for = duration_field(*policy, "retain_for", p.retain_for);
  if (!retain_for.ok()) return retain_for.status();
  p.retain_for = *retain_for;
  auto block_timeout = duration_field(*policy, "block_timeout", p.block_timeout);
  if (!block_timeout.ok()) return block_timeout.status();
  p.block_timeout = *block_timeout;
  auto compact_after = duration_field(*policy, "compact_after", p.compact_after);
  if (!compact_after.ok()) return compact_after.status();
  p.compact_after = *compact_after;
  if (const JsonValue* type = policy->get("timestamp_type")) {
    const auto parsed = type->is_string() ? parse_timestamp_type(type->text()) : std::nullopt;
    if (!parsed) return bad_argument("timestamp_type", "timestamp_type must be \"CreateTime\" or \"LogAppendTime\"");
    p.timestamp_type = *parsed;
  }
  return p;
}

}  // namespace streamd::http_api
