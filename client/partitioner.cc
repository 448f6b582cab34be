#include "client/partitioner.h"

namespace streamd::client {

uint32_t fnv1a32(std::string_view bytes) {
  constexpr uint32_t kOffsetBasis = 0x811c9dc5u;
  constexpr uint32_t kPrime = 0x01000193u;
  uint32_t hash = kOffsetBasis;
  for (char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= kPrime;
  }
  return hash;
}

int32_t partition_of(std::string_view key, int32_t partitions) {
  if (partitions < 1) partitions = 1;
  return static_cast<int32_t>(fnv1a32(key) % static_cast<uint32_t>(partitions));
}

}  // namespace streamd::client
