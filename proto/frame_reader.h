// FrameReader splits a received byte stream into frame bodies (framing: proto/framing.h). It owns a
// connection's receive buffer and checks a frame's declared length against max_frame_bytes BEFORE it
// grows the buffer for the body, so a hostile length (0xFFFFFFFF) costs nothing. Several pipelined
// frames can arrive in one read; next() hands them out one by one without copying. Not thread-safe:
// one connection's reader owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "proto/framing.h"

namespace streamd {

class FrameReader {
 public:
  enum class State {
    kNeedMore,  // read more bytes into writable()
    kFrame,     // body holds one whole frame's bytes
    kTooLarge,  // declared_length is over the limit; the stream cannot be resynchronised
  };
  struct Next {
    State state = State::kNeedMore;
    std::string_view body;         // kFrame: valid until the next call to writable() or next()
    uint64_t declared_length = 0;  // kFrame and kTooLarge
  };

  explicit FrameReader(uint64_t max_frame_bytes, size_t read_chunk = 32 * 1024);

  // Where the next socket read goes: never empty, at most as large as the pending frame needs (or one
  // read chunk). Moves buffered bytes, which invalidates any body handed out before.
  std::span<char> writable();
  // Records that n bytes were read into the span writable() returned.
  void commit(size_t n);
  // The next complete frame, if the buffer holds one.
  Next next();

  // Bytes received and not yet handed out as frames (a truncated frame at EOF shows here).
  size_t buffered() const { return end_ - begin_; }
  size_t capacity() const { return capacity_; }

 private:
  // Reallocates to `capacity` bytes (more than end_), keeping the bytes before end_.
  void grow(size_t capacity);

  const uint64_t max_frame_bytes_;
  const size_t read_chunk_;
  std::unique_ptr<char[]> buf_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace streamd
