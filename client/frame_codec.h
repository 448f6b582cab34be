// The client's frame decoder (framing: proto/framing.h). This file knows bytes only, not messages.
//
// FrameDecoder accumulates bytes read from a socket and cuts complete frames out of them; it refuses
// a header announcing more than its limit before buffering that much. Not thread-safe: one reader
// owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/framing.h"

namespace streamd::client {

class FrameDecoder {
 public:
  enum class State { kFrame, kNeedMore, kTooLarge };

  explicit FrameDecoder(uint64_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Space for at least `n` more bytes; write into it, then commit() what was written.
  char* prepare(size_t n);
  void commit(size_t n) { end_ += n; }
  void feed(std::string_view bytes);

  // kFrame sets *body to the next complete body, valid until the next prepare()/feed(). kTooLarge
  // reports the announced size in *announced; the stream cannot be resynchronised after it.
  State next(std::string_view* body, uint64_t* announced = nullptr);

  size_t buffered() const { return end_ - begin_; }

 private:
  uint64_t max_frame_bytes_;
  std::string buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace streamd::client
