// StreamMeta: what a stream directory records about its stream — the normalized policy and the creation
// instant — in one small file, <stream dir>/STREAM (byte layout: docs/FORMAT.md §"Stream metadata").
//
// The file is replaced atomically: the new contents go to STREAM.tmp, are fsynced, renamed over STREAM,
// and the directory is fsynced, so a crash at any point leaves the old file or the new one, never a mix.
// A CRC32C covers every byte, so a damaged file is refused (STREAM_BACKEND_FAILED) instead of being read
// as another policy.
//
// Thread-safety: free functions with no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "server/storage/file_system.h"
#include "server/storage/policy.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

namespace stream_meta_format {
inline constexpr char kMagic[4] = {'S', 'D', 'S', 'M'};
// Version 2 adds the timestamp type; version 1 files (written before it existed) still read, as
// LogAppendTime, how their streams behaved then.
inline constexpr uint8_t kVersion1 = 1;
inline constexpr uint8_t kVersion = 2;
// Version 1: magic + version + partitions (u32) + 7 policy fields (i64) + created_at (i64) + crc (u32).
inline constexpr size_t kSizeV1 = 4 + 1 + 4 + 7 * 8 + 8 + 4;
// Version 2: version 1's fields, then timestamp_type (u8), then the crc.
inline constexpr size_t kSize = kSizeV1 + 1;
inline constexpr const char* kFileName = "STREAM";
inline constexpr const char* kTempFileName = "STREAM.tmp";
}  // namespace stream_meta_format

struct StreamMeta {
  Policy policy;
  Timestamp created_at;
  bool operator==(const StreamMeta&) const = default;
};

std::string encode_stream_meta(const StreamMeta& meta);
// STREAM_BACKEND_FAILED (fields path, reason) for a file of the wrong size for its version, magic,
// version or CRC.
Result<StreamMeta> decode_stream_meta(std::string_view bytes, const std::string& path);

// Writes <dir>/STREAM atomically and durably (temp file, fsync, rename, fsync dir). `after_rename` runs
// once the new file is in place, before the directory sync (durable_write.h's replace_file).
Status write_stream_meta(FileSystem& fs, const std::string& dir, const StreamMeta& meta,
                         const std::function<void()>& after_rename = {});
Result<StreamMeta> read_stream_meta(FileSystem& fs, const std::string& dir);

}  // namespace streamd
