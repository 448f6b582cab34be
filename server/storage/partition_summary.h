// PartitionSummary: what a partition answers while its files are closed — its bounds, size and
// segments — kept in its clean marker (docs/FORMAT.md §"Clean close"), so that a restart learns it
// from one small file instead of opening every segment. The marker is only ever present while the
// files are exactly as it describes them (partition_log.h), so the summary is exact whenever it is
// found; a damaged or empty marker has no summary, and the partition is opened instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/segment_info.h"
#include "server/storage/types.h"

namespace streamd {

struct PartitionSummary {
  Bounds bounds;
  uint64_t size_bytes = 0;
  std::vector<SegmentInfo> segments;  // the last is the active one
  // The idempotent producers' states as of the clean close (ProducerState::snapshot); empty: none.
  std::string producers;
};

// u8 version (2), u64 first, u64 next, u64 size_bytes, u32 count, then per segment u64 base, u64 end,
// u64 bytes, i64 min_appended_at, i64 max_appended_at (microseconds); then u32 length and the producers'
// snapshot; then u32 CRC32C of all before it. Little-endian. Version 1, without the producers, is read
// too.
std::string encode_summary(const PartitionSummary& summary);
// nullopt unless `bytes` is a whole, well-formed summary whose CRC matches.
std::optional<PartitionSummary> decode_summary(std::string_view bytes);

}  // namespace streamd
