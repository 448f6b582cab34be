#include "server/storage/durable_write.h"

#include <algorithm>

namespace streamd {
namespace {

constexpr size_t kZeroChunk = 1 << 20;

std::string_view zeros(size_t n) {
  static const std::string z(kZeroChunk, '\0');
  return std::string_view(z).substr(0, n);
}

}  // namespace

Status replace_file(FileSystem& fs, const std::string& dir, const std::string& temp_path, const std::string& path,
                    std::string_view bytes, const std::function<void()>& after_rename) {
  {
    auto file = fs.open(temp_path, OpenMode::kCreate);
    if (!file.ok()) return file.status();
    Status written = (*file)->truncate(0);
    if (written.ok()) written = (*file)->write_at(FilePosition(0), bytes);
    if (written.ok()) written = (*file)->sync();
    if (!written.ok()) {
      file->reset();
      // Best effort: the old file is intact either way, and the next replacement truncates the temp.
      (void)fs.remove(temp_path);
      return written;
    }
  }
  STREAMD_RETURN_IF_ERROR(fs.rename(temp_path, path));
  if (after_rename) after_rename();
  return fs.sync_dir(dir);
}

Status write_zeros(File& file, uint64_t from, uint64_t to) {
  for (uint64_t pos = from; pos < to;) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(kZeroChunk, to - pos));
    STREAMD_RETURN_IF_ERROR(file.write_at(FilePosition(pos), zeros(n)));
    pos += n;
  }
  return Status();
}

Status cut_unfinished_write(File& file, uint64_t end, ZeroFillAhead* fill) {
  STREAMD_RETURN_IF_ERROR(file.truncate(end));
  if (fill != nullptr) fill->reset(end);
  return file.sync();
}

Status ZeroFillAhead::ensure(File& file, uint64_t written, uint64_t need) {
  if (need <= end_) return Status();
  const uint64_t from = std::max(end_, written);
  const uint64_t target = std::max(need, std::min(from + window_for(written), limit_));
  STREAMD_RETURN_IF_ERROR(write_zeros(file, from, target));
  end_ = target;
  return Status();
}

}  // namespace streamd
