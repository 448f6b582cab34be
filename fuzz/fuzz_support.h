// What the fuzz targets share. Mutating a log's bytes almost always breaks a batch's CRC32C, and a
// fuzzer cannot invert a CRC, so a target that wants to reach past check_batch() into the record
// decoder and recovery repairs the CRCs of the mutated bytes first (the input's first byte says
// whether), as a writer that got everything else wrong would have sealed them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace streamd::fuzz {

// Walks `log` batch by batch from position 0 by their length fields and rewrites each whole batch's
// CRC32C over its bytes; stops at the first length that is zero, shorter than a header, or runs past
// the end. Returns the number of batches repaired.
size_t repair_batch_crcs(std::string& log);

// Reads the input as a flags byte and the rest; an empty input has flags 0.
struct Split {
  uint8_t flags = 0;
  std::string rest;
};
Split split_flags(const uint8_t* data, size_t size);

}  // namespace streamd::fuzz
