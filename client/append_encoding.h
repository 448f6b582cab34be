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

// Request fields after the id: `append` (field 15) holding the stream name and the records that
// append_encoded_record() wrote to `encoded_records`.
std::string encode_append_body(std::string_view stream, std::string_view encoded_records);

}  // namespace streamd::client
