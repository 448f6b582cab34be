// Encodes a Read's answer (Response{id, read: ReadResponse}) into one frame, straight from the
// broker's read results: record bytes go from the storage read buffers into the frame once.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/broker/broker.h"

namespace streamd {

struct ReadStats {
  uint64_t records = 0;
  uint64_t bytes = 0;  // key + payload + headers of the records returned
};

std::string encode_read_frame(uint64_t request_id, const std::vector<PartitionRead>& reads, ReadStats* stats);

}  // namespace streamd
