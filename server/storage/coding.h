// Little-endian fixed-width integers and LEB128 varints, the primitive encodings of docs/FORMAT.md.
// The broker runs on little-endian hosts only (x86-64, aarch64); memcpy keeps unaligned access legal.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace streamd::coding {

inline void put_fixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void put_fixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint32_t get_fixed32(const char* src) {
  uint32_t v;
  std::memcpy(&v, src, 4);
  return v;
}
inline uint64_t get_fixed64(const char* src) {
  uint64_t v;
  std::memcpy(&v, src, 8);
  return v;
}

inline void append_varint(std::string& dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst.append(buf, static_cast<size_t>(n));
}

inline size_t varint_length(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Reads a varint from the front of `in` and advances it; false when truncated or over 64 bits.
inline bool get_varint(std::string_view& in, uint64_t& out) {
  uint64_t result = 0;
  for (unsigned shift = 0, i = 0; shift <= 63 && i < in.size(); shift += 7, ++i) {
    auto byte = static_cast<uint8_t>(in[i]);
    if (shift == 63 && byte > 1) return false;  // the tenth byte may only hold bit 63
    result |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      in.remove_prefix(i + 1);
      out = result;
      return true;
    }
  }
  return false;
}

// Reads a varint length then that many bytes; false when either is short.
inline bool get_length_prefixed(std::string_view& in, std::string_view& out) {
  uint64_t len = 0;
  if (!get_varint(in, len) || len > in.size()) return false;
  out = in.substr(0, static_cast<size_t>(len));
  in.remove_prefix(static_cast<size_t>(len));
  return true;
}

}  // namespace streamd::coding
