// Framing of SPEC.md §7: every frame is a 4-byte big-endian body length followed by the body (one
// serialized protobuf message). This file knows bytes only, not messages.
//
// FrameDecoder accumulates bytes read from a socket and cuts complete frames out of them; it refuses
// a header announcing more than its limit before buffering that much. Not thread-safe: one reader
// owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace streamd::client {

inline constexpr size_t kFrameHeaderBytes = 4;

// Writes the big-endian length prefix of a body of `body_size` bytes to out[0..4).
void put_frame_header(char* out, uint32_t body_size);
// Reads the length prefix from in[0..4).
uint32_t get_frame_header(const char* in);

class FrameDecoder {
 public:
  enum class State { kFrame, kNeedMore, kTooLarge };

  explicit FrameDecoder(uint64_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  void set_max_frame_bytes(uint64_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }

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
