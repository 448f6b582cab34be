// Conversions between the client's value types (types.h) and the generated protocol messages, for the
// client's .cc files only: it includes the generated header, which public headers keep out.
#pragma once

#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"
#include "streamd.pb.h"

namespace streamd::client::wire {

void to_proto(const Record& record, v1::Record* out);
void to_proto(const Policy& policy, v1::Policy* out);
Record from_proto(const v1::Record& record);
Entry from_proto(const v1::Entry& entry);
Policy from_proto(const v1::Policy& policy);
Error from_proto(const v1::Error& error);

// Sends every request pipelined and waits for all the answers; statuses[i] and responses[i] belong
// to requests[i].
void call_all(Connection& connection, std::vector<v1::Request>& requests, std::chrono::milliseconds timeout,
              std::vector<Status>* statuses, std::vector<v1::Response>* responses);

}  // namespace streamd::client::wire
