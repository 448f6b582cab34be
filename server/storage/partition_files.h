// The files of a partition directory besides its segments (docs/FORMAT.md): shared by the partition's
// write path, recovery and maintenance.
#pragma once

#include <string>
#include <string_view>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/types.h"

namespace streamd::partition_files {

// Left by a clean close: the next open trusts the files and scans nothing.
inline constexpr const char* kCleanMarker = "clean";
// The first retained offset, when a trim raised it above the first segment's base.
inline constexpr const char* kFirstOffsetFile = "first_offset";
// A compaction's rewritten log before it is swapped in.
inline constexpr const char* kSwapSuffix = ".swap";

inline bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// first_offset: u64 offset + u32 CRC32C of those 8 bytes, little-endian.
inline constexpr size_t kFirstOffsetSize = 12;

inline std::string encode_first(Offset first) {
  std::string buf(kFirstOffsetSize, '\0');
  coding::put_fixed64(buf.data(), first.value);
  coding::put_fixed32(buf.data() + 8, crc32c(std::string_view(buf.data(), 8)));
  return buf;
}

}  // namespace streamd::partition_files
