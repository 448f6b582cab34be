// Records, policies and instants as the HTTP API writes and reads them (docs/HTTP.md §Records).
//
// An entry is written in the shape `streamctl consume --json` prints — partition, offset,
// appended_at (RFC 3339, UTC, microseconds), key and payload as text (null when not valid UTF-8),
// key_b64 and payload_b64 always, headers with name, value and value_b64 — so binary round-trips.
// A record to produce names each of key, payload and a header's value either as text or as base64
// (`key` or `key_b64`, never both). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/broker/broker.h"
#include "server/http_api/json.h"
#include "server/storage/read_result.h"
#include "server/storage/status.h"

namespace streamd::http_api {

// "2026-11-29T10:02:17.389121Z".
std::string format_time(int64_t micros_since_epoch);
// Any RFC 3339 instant (Z or ±hh:mm, 0–9 fractional digits); STREAM_MISCONFIGURED naming `field`.
Result<int64_t> parse_time(std::string_view field, std::string_view text);

void write_entry(JsonWriter& w, PartitionId partition, const EntryView& e);

// Owned bytes of records decoded from a produce body; `inputs` views into `records`.
struct DecodedRecords {
  std::vector<Record> records;
  std::vector<RecordInput> inputs;
};
// {"records":[{"key"|"key_b64", "payload"|"payload_b64", "headers":[{"name","value"|"value_b64"}]}]}.
// STREAM_MISCONFIGURED naming the field (records[3].payload_b64) for anything else.
Result<DecodedRecords> decode_records(const JsonValue& body);

void write_policy(JsonWriter& w, const Policy& p);
// The fields of docs/SEMANTICS.md §3, each optional: numbers, and durations as "7d" text or *_ms numbers.
Result<Policy> decode_policy(const JsonValue* policy);

}  // namespace streamd::http_api
