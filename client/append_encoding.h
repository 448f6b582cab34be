// Append requests encoded straight into protobuf wire format (proto/streamd.proto's Request, field
// `append`), without building a message per record: the Producer appends each record's bytes to its
// batch's buffer as the record is sent, and a resend reuses the buffer. The bytes are exactly those
// the generated code writes for the same values (tests/client/append_encoding_test.cc); any
// protobuf parser reads them. Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/types.h"

namespace streamd::client {

// Appends `record` as one element of AppendRequest.records (field 2) to `out`.
void append_encoded_record(std::string* out, const Record& record);

// The Request fields after the id up to the records: `append` (field 15), sized for the stream name and
// `encoded_records_size` bytes that append_encoded_record() wrote, and the stream name. The records'
// bytes follow it on the wire as they are (Connection::call_async_encoded takes both pieces).
std::string encode_append_head(std::string_view stream, size_t encoded_records_size);

}  // namespace streamd::client
