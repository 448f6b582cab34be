// The Kafka request header (v1, or v2 for flexible versions: client id then tagged fields) and the
// size-prefixed framing both directions share (docs/KAFKA.md §Wire). Pure functions over bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/kafka/api_table.h"

namespace streamd::kafka {

struct RequestHeader {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::string client_id;
};

enum class HeaderStatus {
  kOk,
  kMalformed,           // too short, or a client id that does not parse
  kUnknownApi,          // an api key not in the table
  kUnsupportedVersion,  // a version outside the table's range for that key
};

struct ParsedHeader {
  HeaderStatus status = HeaderStatus::kMalformed;
  RequestHeader header;
  const ApiInfo* api = nullptr;  // set unless kMalformed or kUnknownApi
  std::string_view body;         // the bytes after the header, when kOk
};

// Parses the header of one request frame (without its 4-byte size). The fixed part (key, version,
// correlation id) is read even when the api or version is refused, so an answer can name it.
ParsedHeader parse_request(std::string_view frame);

inline constexpr size_t kResponsePrefix = 8;  // size + correlation id

// A response buffer with room for the size, then the response header: the correlation id (v0), and
// with `header_v1` an empty set of tagged fields after it (the header of flexible versions but
// ApiVersions'). finish_response fills the size in: `frame`'s own, or `total` where more bytes are
// sent after it (an Answer's views).
std::string start_response(int32_t correlation_id, bool header_v1 = false);
void finish_response(std::string& frame, size_t total = 0);

}  // namespace streamd::kafka
