// The placement rule of the protocol (docs/SEMANTICS.md §2): a keyed record belongs to
// partition fnv1a32(key) % partitions. The broker routes by it and producers group records by it, so it
// is part of the wire contract and defined once, here, for both (header-only, no protobuf).
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace streamd::placement {

// 32-bit FNV-1a: offset basis 0x811c9dc5, prime 0x01000193.
constexpr uint32_t fnv1a32(std::string_view bytes) {
  uint32_t hash = 0x811c9dc5u;
  for (char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x01000193u;
  }
  return hash;
}

// A count below 1 is read as 1. An empty key hashes the empty string; unkeyed batches are spread
// round-robin by the broker instead of asking.
constexpr int32_t partition_of(std::string_view key, int32_t partitions) {
  if (partitions < 1) partitions = 1;
  return static_cast<int32_t>(fnv1a32(key) % static_cast<uint32_t>(partitions));
}

}  // namespace streamd::placement
