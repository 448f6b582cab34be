// The framing of the wire protocol (docs/PROTOCOL.md §Framing) and the protocol version, defined once
// for the broker and the client: every frame is a 4-byte big-endian body length followed by the body,
// one serialized Protobuf message. Header-only, no Protobuf; pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace streamd {

inline constexpr size_t kFrameHeaderBytes = 4;
// The version Hello carries (HelloRequest.protocol_version); docs/PROTOCOL.md describes version 1.
inline constexpr uint32_t kProtocolVersion = 1;

inline uint32_t read_frame_length(const char* header) {
  const auto* b = reinterpret_cast<const unsigned char*>(header);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

inline void write_frame_length(char* header, uint32_t length) {
  header[0] = static_cast<char>(length >> 24);
  header[1] = static_cast<char>(length >> 16);
  header[2] = static_cast<char>(length >> 8);
  header[3] = static_cast<char>(length);
}

}  // namespace streamd
