// The one placement rule (the seed's PartitionOf): 32-bit FNV-1a of the key modulo the partition count,
// the same in the broker and in every client, so a key's records always share a partition.
#pragma once

#include <cstdint>
#include <string_view>

namespace streamd {

uint32_t fnv1a32(std::string_view bytes);

// A count below 1 is read as 1. An empty key hashes the empty string (callers route unkeyed batches
// round-robin instead of asking).
int32_t partition_of(std::string_view key, int32_t partitions);

}  // namespace streamd
