#include "proto/frame_reader.h"

#include <algorithm>
#include <cstring>

namespace streamd {

FrameReader::FrameReader(uint64_t max_frame_bytes, size_t read_chunk)
    : max_frame_bytes_(max_frame_bytes), read_chunk_(read_chunk) {}

std::span<char> FrameReader::writable() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
    // A large frame grew the buffer; an idle connection gives that memory back.
    if (capacity_ > 4 * read_chunk_) {
      buf_.reset();
      capacity_ = 0;
    }
  }
  size_t need = kFrameHeaderBytes;
  if (end_ - begin_ >= kFrameHeaderBytes) {
    const uint64_t length = read_frame_length(buf_.get() + begin_);
    // next() refuses such a frame before anyone asks for room; never allocate for it regardless.
    if (length <= max_frame_bytes_) need = kFrameHeaderBytes + length;
  }
  const size_t want = std::max(need, read_chunk_);
  if (capacity_ - begin_ < want && begin_ > 0) {
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (capacity_ < want) {
    grow(want);
  } else if (end_ == capacity_) {
    grow(capacity_ + std::max(capacity_ / 2, read_chunk_));
  }
  return {buf_.get() + end_, capacity_ - end_};
}

void FrameReader::grow(size_t capacity) {
  // Not zero-filled: every byte past end_ is written by a socket read before anything reads it, and
  // zeroing a megabyte frame's room cost the loop as much as receiving it.
  auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
  if (end_ > 0) std::memcpy(bigger.get(), buf_.get(), end_);
  buf_ = std::move(bigger);
  capacity_ = capacity;
}

void FrameReader::commit(size_t n) {
  end_ += n;
}

FrameReader::Next FrameReader::next() {
  Next out;
  if (end_ - begin_ < kFrameHeaderBytes) return out;
  out.declared_length = read_frame_length(buf_.get() + begin_);
  if (out.declared_length > max_frame_bytes_) {
    out.state = State::kTooLarge;
    return out;
  }
  if (end_ - begin_ < kFrameHeaderBytes + out.declared_length) return out;
  out.state = State::kFrame;
  out.body = std::string_view(buf_.get() + begin_ + kFrameHeaderBytes, out.declared_length);
  begin_ += kFrameHeaderBytes + out.declared_length;
  return out;
}

}  // namespace streamd
