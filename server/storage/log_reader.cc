#include "server/storage/log_reader.h"

#include <algorithm>

#include "server/storage/coding.h"

namespace streamd {

LogReader::LogReader(const File& file, FilePosition start, uint64_t limit, size_t chunk_bytes,
                     std::vector<std::unique_ptr<char[]>>* kept)
    : file_(file), pos_(start.value), limit_(limit), chunk_(std::max<size_t>(chunk_bytes, 4096)), kept_(kept) {}

LogReader::~LogReader() { release_buffer(); }

void LogReader::release_buffer() {
  if (keep_ && kept_ != nullptr && buf_) kept_->push_back(std::move(buf_));
  buf_.reset();
  buf_len_ = 0;
  keep_ = false;
}

bool LogReader::refill(size_t at_least) {
  release_buffer();
  uint64_t want = std::min<uint64_t>(std::max(chunk_, at_least), limit_ - pos_);
  buf_.reset(new char[static_cast<size_t>(want)]);
  auto n = file_.read_at(FilePosition(pos_), buf_.get(), static_cast<size_t>(want));
  if (!n.ok()) {
    io_ = n.status();
    return false;
  }
  buf_len_ = *n;
  buf_start_ = pos_;
  return true;
}

bool LogReader::next(LogBatch& out) {
  if (!io_.ok()) return false;
  if (pos_ >= limit_) {
    stop_ = BatchCheck::kOk;
    return false;
  }
  for (;;) {
    bool have_buffer = buf_ && pos_ >= buf_start_ && pos_ < buf_start_ + buf_len_;
    std::string_view avail;
    if (have_buffer) avail = std::string_view(buf_.get(), buf_len_).substr(static_cast<size_t>(pos_ - buf_start_));
    // A batch cut by the chunk's end is not torn until a read from its start proves the file ends there.
    bool cut_by_chunk = !have_buffer || buf_start_ + buf_len_ < limit_;
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
      if (!refill(need)) return false;
      if (buf_len_ > avail.size()) continue;
    }
    stop_ = check;
    return false;
  }
}

}  // namespace streamd
