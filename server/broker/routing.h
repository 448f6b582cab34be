// Append routing, exactly docs/SEMANTICS.md §2's Append: which partition a batch goes to, or
// why it is refused. Checked in this order, each refusal leaving nothing written:
//  - no record: INVALID_BATCH_SIZE;
//  - a record whose key + payload + headers exceed max_record_bytes: RECORD_TOO_LARGE, fields index
//    (the first such record), size and limit;
//  - keyed records hashing to different partitions: PARTITIONS_MIXED, fields index (the first record off
//    the batch's partition), record_partition, partition (the batch's: partition_of the first keyed
//    record) and first_keyed_index.
// Unkeyed records follow the batch. A batch with no key at all takes the next partition of the stream's
// rotation (one counter per stream, shared by every producer of this broker), among the partitions of
// this broker's `share` (stream_engine.h).
//
// Thread-safety: a pure function apart from the atomic rotation counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/broker/stream_engine.h"

namespace streamd {

Result<PartitionId> route_batch(const std::string& stream, const std::vector<RecordInput>& records,
                                int32_t partitions, int64_t max_record_bytes, std::atomic<uint64_t>& rotation,
                                RotationShare share = {});

// A batch whose producer chose its partition (the Kafka listener): the same empty-batch and size
// refusals as route_batch, UNKNOWN_PARTITION for a partition outside 0..partitions-1, and, only when
// `enforce_placement`, PARTITIONS_MIXED for a keyed record that partition_of places elsewhere.
Status check_placed_batch(const std::string& stream, const std::vector<RecordInput>& records, PartitionId partition,
                          int32_t partitions, int64_t max_record_bytes, bool enforce_placement);

}  // namespace streamd
