// CRC32C (Castagnoli), the checksum of every record batch (docs/FORMAT.md). Uses the SSE4.2 crc32
// instruction when the CPU has it, a slicing table otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace streamd {

// Extends `crc` (the CRC32C of earlier bytes, 0 for none) over n more bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

inline uint32_t crc32c(std::string_view bytes) { return crc32c_extend(0, bytes.data(), bytes.size()); }

// The CRC32C of a message A carried past n more bytes B, in O(log n): CRC(A || B) =
// crc32c_shift(CRC(A), |B|) ^ CRC(B). Lets a checksum over a region be rebased onto other bytes before
// it without reading the region again (the Kafka Fetch answer, server/kafka/fetch_batch.cc).
uint32_t crc32c_shift(uint32_t crc, uint64_t n);

// The portable implementation, exposed so tests can check both paths agree.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);

}  // namespace streamd
