#include "client/frame_codec.h"

#include <cstring>

namespace streamd::client {

char* FrameDecoder::prepare(size_t n) {
  // Consumed bytes are reclaimed by moving the unread tail to the front, at most once per call.
  if (begin_ > 0 && (begin_ == end_ || buffer_.size() - end_ < n)) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < n) buffer_.resize(end_ + n);
  return buffer_.data() + end_;
}

void FrameDecoder::feed(std::string_view bytes) {
  std::memcpy(prepare(bytes.size()), bytes.data(), bytes.size());
  commit(bytes.size());
}

FrameDecoder::State FrameDecoder::next(std::string_view* body, uint64_t* announced) {
  if (end_ - begin_ < kFrameHeaderBytes) return State::kNeedMore;
  const uint32_t size = read_frame_length(buffer_.data() + begin_);
  if (size > max_frame_bytes_) {
    if (announced != nullptr) *announced = size;
    return State::kTooLarge;
  }
  if (end_ - begin_ < kFrameHeaderBytes + size) return State::kNeedMore;
  *body = std::string_view(buffer_.data() + begin_ + kFrameHeaderBytes, size);
  begin_ += kFrameHeaderBytes + size;
  return State::kFrame;
}

}  // namespace streamd::client
