#include "server/storage/producer_ids.h"

#include <limits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/durable_write.h"

namespace streamd {
namespace {

// u64 the first id of the next block, u32 CRC32C of those 8 bytes; little-endian.
constexpr size_t kFileBytes = 12;

Status damaged_ids_file(const std::string& path, const std::string& reason) {
  return Status(Code::kStreamBackendFailed, "The producer id file " + path + " is damaged: " + reason,
                {{"op", "read producer ids"}, {"path", path}, {"reason", reason}});
}

}  // namespace

Result<std::unique_ptr<ProducerIds>> ProducerIds::open(FileSystem& fs, std::string dir, std::string path) {
  uint64_t start = 0;
  if (fs.exists(path)) {
    auto file = fs.open(path, OpenMode::kReadOnly);
    if (!file.ok()) return file.status();
    char buf[kFileBytes];
    auto n = (*file)->read_at(FilePosition(0), buf, sizeof buf);
    if (!n.ok()) return n.status();
    if (*n != kFileBytes) return damaged_ids_file(path, "size " + std::to_string(*n) + ", expected 12");
    if (coding::get_fixed32(buf + 8) != crc32c(std::string_view(buf, 8))) return damaged_ids_file(path, "CRC mismatch");
    start = coding::get_fixed64(buf);
  }
  return std::unique_ptr<ProducerIds>(new ProducerIds(fs, std::move(dir), std::move(path), start));
}

Result<int64_t> ProducerIds::next() {
  std::lock_guard lock(mu_);
  if (next_ == block_end_) {
    const uint64_t end = next_ + kBlock;
    if (end > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status(Code::kStreamBackendFailed, "every producer id has been handed out", {{"path", path_}});
    }
    char buf[kFileBytes];
    coding::put_fixed64(buf, end);
    coding::put_fixed32(buf + 8, crc32c(std::string_view(buf, 8)));
    STREAMD_RETURN_IF_ERROR(replace_file(fs_, dir_, path_ + ".tmp", path_, std::string_view(buf, sizeof buf)));
    block_end_ = end;
  }
  return static_cast<int64_t>(next_++);
}

}  // namespace streamd
