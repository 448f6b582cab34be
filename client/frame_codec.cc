#include "client/frame_codec.h"

#include <cstring>

namespace streamd::client {

void put_frame_header(char* out, uint32_t body_size) {
  out[0] = static_cast<char>((body_size >> 24) & 0xff);
  out[1] = static_cast<char>((body_size >> 16) & 0xff);
  out[2] = static_cast<char>((body_size >> 8) & 0xff);
  out[3] = static_cast<char>(body_size & 0xff);
}

uint32_t get_frame_header(const char* in) {
  const auto* u = reinterpret_cast<const unsigned char*>(in);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

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
  const uint32_t size = get_frame_header(buffer_.data() + begin_);
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
