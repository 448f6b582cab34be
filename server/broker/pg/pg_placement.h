// Where a stream of a sharded postgres engine lives (docs/SCALING.md §"Shards"): the placement rule.
//
// Rendezvous (highest random weight) hashing over the shards' names: each shard scores a stream name
// with a hash of (shard name, stream name), and the highest score is the stream's shard. The rule is a
// function of the names alone, so every broker with the same shard list places every name alike, with
// no table to consult and nothing to agree on at run time; and were a shard added to the list, only
// the names it then scores highest would move to it (about 1/N of them), none between the old shards.
//
// The score: FNV-1a (64-bit) over the shard's name, one zero byte and the stream's name, put through
// SplitMix64's finalizer (FNV-1a alone spreads similar names poorly in its high bits). Equal scores,
// which take a 64-bit collision, go to the shard listed first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace streamd::pg_placement {

uint64_t score(std::string_view shard, std::string_view stream);

// The index in `shards` of the shard `stream` lives on; `shards` is not empty.
size_t shard_of(const std::vector<std::string>& shards, std::string_view stream);

}  // namespace streamd::pg_placement
