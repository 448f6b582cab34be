// The payload every record of the multi-broker and failover loads carries: which producer sent it, in
// which of its batches, at which index of how many ("p3.b17.i2.n5"). Reading a log back, these name
// each batch, so a check can tell a lost, partial, duplicated or reordered batch from a whole one.
#pragma once

#include <string>

namespace streamd::testing {

struct BatchPayload {
  int producer = -1;
  int seq = -1;
  int index = -1;
  int count = -1;
};

std::string payload_of(int producer, int seq, int index, int count);

// False for anything that is not a payload of this shape with 0 <= index < count.
bool parse_payload(const std::string& payload, BatchPayload& out);

}  // namespace streamd::testing
