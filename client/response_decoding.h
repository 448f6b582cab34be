// Hand decoding of the broker's answers where generated code costs too much: the Response envelope
// (id, error, which body) without parsing the body, and a ReadResponse straight into client Entries —
// one allocation per key, payload and header instead of a message per entry. The result is what the
// generated parser and wire::from_proto give for the same bytes (tests/client/response_decoding_test.cc
// compares them on generated answers, unknown fields included). Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

// The top-level fields of a Response: its id, the bytes of its Error (empty when none) and the
// number and bytes of its body field (0 when it has none).
struct ResponseView {
  uint64_t id = 0;
  std::string_view error;
  uint32_t body_field = 0;
  std::string_view body;
};
bool scan_response(std::string_view frame_body, ResponseView* out);

// An Error message's bytes as the client's Error.
std::optional<Error> decode_error(std::string_view bytes);

struct ReadAnswer {
  std::vector<Entry> entries;                      // partition by partition, each in offset order
  std::vector<std::pair<int32_t, uint64_t>> next;  // partition, the cursor to continue from
  std::optional<Error> error;                      // the first per-partition error, field `partition` added
};
// False when the bytes are not a well-formed ReadResponse.
bool decode_read_response(std::string_view bytes, ReadAnswer* out);

}  // namespace streamd::client
