// Conversions between the wire protocol's messages (proto/streamd.proto) and the broker's values.
// Pure functions, no I/O; thread-safe. Durations travel as milliseconds, instants as microseconds
// since the Unix epoch (the same as Timestamp).
#pragma once

#include "server/broker/broker.h"
#include "streamd.pb.h"

namespace streamd {

Policy policy_from_wire(const v1::Policy& p);
void policy_to_wire(const Policy& p, v1::Policy* out);
// The fields an AlterStreamRequest gives, and only those.
PolicyChange policy_change_from_wire(const v1::AlterStreamRequest& r);

// Fills a wire Error from a failed Status: code, name, message and every field.
void error_to_wire(const Status& status, v1::Error* out);

void entry_to_wire(PartitionId partition, const EntryView& e, v1::Entry* out);
void description_to_wire(const StreamDescription& d, v1::DescribeStreamResponse* out);

}  // namespace streamd
