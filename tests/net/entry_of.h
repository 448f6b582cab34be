// The read tests' entries (read_response_test.cc, wire_convert_test.cc).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "server/storage/read_result.h"

namespace streamd::testing {

// An entry as a read returns it, without a batch of its own.
inline EntryView entry_of(Offset offset, Timestamp appended_at, std::string_view key, std::string_view payload,
                          std::vector<HeaderView> headers) {
  EntryView e;
  e.offset = offset;
  e.appended_at = appended_at;
  e.key = key;
  e.payload = payload;
  e.headers = std::move(headers);
  return e;
}

}  // namespace streamd::testing
