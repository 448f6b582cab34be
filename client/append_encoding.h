// Append requests encoded straight into protobuf wire format (proto/streamd.proto's Request, field
// `append`), without building a message per record: the Producer appends each record's bytes to its
// batch's buffer as the record is sent, and a resend reuses the buffer. The bytes are exactly those
// the generated code writes for the same values (tests/client/append_encoding_test.cc); any
// protobuf parser reads them. Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "client/types.h"

namespace streamd::client {

// Appends `record` as one element of AppendRequest.records (field 2) to `out`.
void append_encoded_record(std::string* out, const Record& record);

// An idempotent producer's batch: its identity, the sequence of its first record, and its partition; a
// transactional producer's also its transactional id.
struct AppendStamp {
  int64_t producer_id = 0;
  int32_t epoch = 0;
  int32_t sequence = 0;
  int32_t partition = 0;
  std::string_view transactional_id;  // empty: not transactional
};

// The Request fields after the id up to the records: `append` (field 15), sized for the stream name, the
// stamp's fields when there is one, and `encoded_records_size` bytes that append_encoded_record() wrote;
// then the stream name and the stamp. The records' bytes follow it on the wire as they are
// (Connection::call_async_encoded takes both pieces).
std::string encode_append_head(std::string_view stream, size_t encoded_records_size,
                               const std::optional<AppendStamp>& stamp = std::nullopt);

}  // namespace streamd::client
