#include "server/storage/log_reader.h"

#include <algorithm>

#include "server/storage/coding.h"

namespace streamd {

LogReader::LogReader(const File& file, FilePosition start, uint64_t limit, size_t chunk_bytes, ChunkBuffers buffers)
    : file_(file), pos_(start.value), limit_(limit), chunk_(std::max<size_t>(chunk_bytes, 4096)), buffers_(buffers) {}

void LogReader::set_chunk_bytes(size_t chunk_bytes) { chunk_ = std::max<size_t>(chunk_bytes, 4096); }

bool LogReader::refill(size_t at_least) {
  auto want = static_cast<size_t>(std::min<uint64_t>(std::max(chunk_, at_least), limit_ - pos_));
  std::shared_ptr<char[]> fresh;
  char* into = nullptr;
  if (buffers_ == ChunkBuffers::kKept) {
    fresh = std::make_shared_for_overwrite<char[]>(want);
    into = fresh.get();
  } else {
    if (want > buf_capacity_) {
      buf_.reset(new char[want]);
      buf_capacity_ = want;
    }
    into = buf_.get();
  }
  auto n = file_.read_at(FilePosition(pos_), into, want);
  if (!n.ok()) {
    io_ = n.status();
    return false;
  }
  if (fresh) kept_ = std::move(fresh);
  window_ = into;
  window_len_ = *n;
  window_start_ = pos_;
  return true;
}

bool LogReader::next(LogBatch& out) {
  if (!io_.ok()) return false;
  if (pos_ >= limit_) {
    stop_ = BatchCheck::kOk;
    return false;
  }
  for (;;) {
    bool have_window = window_ != nullptr && pos_ >= window_start_ && pos_ < window_start_ + window_len_;
    std::string_view avail;
    if (have_window) {
      avail = std::string_view(window_, window_len_).substr(static_cast<size_t>(pos_ - window_start_));
    }
    // A batch cut by the chunk's end is not torn until a read from its start proves the file ends there.
    bool cut_by_chunk = !have_window || window_start_ + window_len_ < limit_;
    BatchHeader header;
    BatchCheck check = BatchCheck::kTruncated;
    if (avail.size() >= 4 || !cut_by_chunk) check = check_batch(avail, header, &reason_);
    if (check == BatchCheck::kOk) {
      out.header = header;
      out.bytes = avail.substr(0, static_cast<size_t>(header.total_size()));
      out.position = FilePosition(pos_);
      pos_ += header.total_size();
      return true;
    }
    if (check == BatchCheck::kTruncated && cut_by_chunk) {
      // Read again from the batch's start, at least the whole batch its length claims. Stop when that
      // brings no more bytes: then the file itself ends inside the batch.
      size_t need = avail.size() >= 4 ? 4 + static_cast<size_t>(coding::get_fixed32(avail.data())) : 0;
      size_t had = avail.size();
      if (!refill(need)) return false;
      if (window_len_ > had) continue;
    }
    stop_ = check;
    return false;
  }
}

}  // namespace streamd
