// The placement rule of SPEC.md §2 (the seed's PartitionOf), the client's own copy: 32-bit FNV-1a of
// the key modulo the partition count. It must answer exactly as the broker's
// server/storage/partitioner.h; tests/client/partitioner_test.cc holds both to the same vectors.
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace streamd::client {

uint32_t fnv1a32(std::string_view bytes);

// A count below 1 is read as 1. An empty key hashes the empty string; producers send unkeyed
// records as unkeyed batches (which the broker spreads round-robin) instead of asking.
int32_t partition_of(std::string_view key, int32_t partitions);

}  // namespace streamd::client
