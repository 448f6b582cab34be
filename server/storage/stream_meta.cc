#include "server/storage/stream_meta.h"

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/durable_write.h"

namespace streamd {
namespace {

namespace meta_fmt = stream_meta_format;

void put_i64(std::string& out, int64_t v) {
  char buf[8];
  coding::put_fixed64(buf, static_cast<uint64_t>(v));
  out.append(buf, 8);
}

int64_t get_i64(const char*& p) {
  auto v = static_cast<int64_t>(coding::get_fixed64(p));
  p += 8;
  return v;
}

Status damaged_meta(const std::string& path, std::string reason) {
  return Status(Code::kStreamBackendFailed, "The stream metadata file " + path + " is damaged: " + reason,
                {{"op", "read stream metadata"}, {"path", path}, {"reason", reason}});
}

}  // namespace

std::string encode_stream_meta(const StreamMeta& meta) {
  const Policy& p = meta.policy;
  std::string out(meta_fmt::kMagic, sizeof meta_fmt::kMagic);
  out.push_back(static_cast<char>(meta_fmt::kVersion));
  char u32[4];
  coding::put_fixed32(u32, static_cast<uint32_t>(p.partitions));
  out.append(u32, 4);
  put_i64(out, p.max_record_bytes);
  put_i64(out, p.retain_for.count());
  put_i64(out, p.retain_bytes);
  put_i64(out, p.max_bytes);
  put_i64(out, p.block_timeout.count());
  put_i64(out, p.segment_bytes);
  put_i64(out, p.compact_after.count());
  put_i64(out, meta.created_at.micros);
  out.push_back(static_cast<char>(p.timestamp_type));
  coding::put_fixed32(u32, crc32c(out));
  out.append(u32, 4);
  return out;
}

Result<StreamMeta> decode_stream_meta(std::string_view bytes, const std::string& path) {
  // The version decides the size; a file too short to hold one is damaged whatever it says.
  const uint8_t version = bytes.size() > 4 ? static_cast<uint8_t>(bytes[4]) : 0;
  const size_t size = version == meta_fmt::kVersion1 ? meta_fmt::kSizeV1 : meta_fmt::kSize;
  if (bytes.size() != size) {
    return damaged_meta(path, "size " + std::to_string(bytes.size()) + ", expected " + std::to_string(size));
  }
  if (bytes.substr(0, 4) != std::string_view(meta_fmt::kMagic, 4)) return damaged_meta(path, "bad magic");
  uint32_t stored_crc = coding::get_fixed32(bytes.data() + size - 4);
  if (crc32c(bytes.substr(0, size - 4)) != stored_crc) return damaged_meta(path, "CRC mismatch");
  if (version != meta_fmt::kVersion1 && version != meta_fmt::kVersion) {
    return damaged_meta(path, "unknown version " + std::to_string(version));
  }
  const char* p = bytes.data() + 5;
  StreamMeta meta;
  meta.policy.partitions = static_cast<int32_t>(coding::get_fixed32(p));
  p += 4;
  meta.policy.max_record_bytes = get_i64(p);
  meta.policy.retain_for = std::chrono::milliseconds(get_i64(p));
  meta.policy.retain_bytes = get_i64(p);
  meta.policy.max_bytes = get_i64(p);
  meta.policy.block_timeout = std::chrono::milliseconds(get_i64(p));
  meta.policy.segment_bytes = get_i64(p);
  meta.policy.compact_after = std::chrono::milliseconds(get_i64(p));
  meta.created_at = Timestamp(get_i64(p));
  // A version 1 stream was served LogAppendTime (the only type there was): it stays so.
  meta.policy.timestamp_type = version == meta_fmt::kVersion1
                                   ? TimestampType::kLogAppendTime
                                   : static_cast<TimestampType>(static_cast<uint8_t>(*p));
  return meta;
}

Status write_stream_meta(FileSystem& fs, const std::string& dir, const StreamMeta& meta,
                         const std::function<void()>& after_rename) {
  return replace_file(fs, dir, dir + "/" + meta_fmt::kTempFileName, dir + "/" + meta_fmt::kFileName, encode_stream_meta(meta),
                      after_rename);
}

Result<StreamMeta> read_stream_meta(FileSystem& fs, const std::string& dir) {
  const std::string path = dir + "/" + meta_fmt::kFileName;
  auto file = fs.open(path, OpenMode::kReadOnly);
  if (!file.ok()) return file.status();
  // One byte more than a valid file holds, so a longer file is seen as such.
  std::string bytes(meta_fmt::kSize + 1, '\0');
  auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
  if (!n.ok()) return n.status();
  bytes.resize(*n);
  return decode_stream_meta(bytes, path);
}

}  // namespace streamd
