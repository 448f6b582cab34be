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

// The varints of three bytes or more, out of line: kept out of read_varint so that its one- and
// two-byte cases, nearly every varint of a batch (deltas, lengths under 8 KiB, header counts),
// inline into every decoding loop.
[[gnu::noinline]] inline bool read_long_varint(const char*& p, const char* end, uint64_t& out) {
  uint64_t result = 0;
  for (unsigned shift = 0; shift <= 63 && p < end; shift += 7) {
    auto byte = static_cast<uint8_t>(*p++);
    if (shift == 63 && byte > 1) return false;  // the tenth byte may only hold bit 63
    result |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      out = result;
      return true;
    }
  }
  return false;
}

// Reads a varint at p (not past end) and advances p; false when truncated or over 64 bits. Works on a
// bare pointer so decoding loops keep their cursor in a register.
[[gnu::always_inline]] inline bool read_varint(const char*& p, const char* end, uint64_t& out) {
  if (p < end && static_cast<uint8_t>(*p) < 0x80) {
    out = static_cast<uint8_t>(*p++);
    return true;
  }
  if (end - p >= 2 && static_cast<uint8_t>(p[1]) < 0x80) {
    out = (static_cast<uint64_t>(static_cast<uint8_t>(p[0]) & 0x7F)) |
          (static_cast<uint64_t>(static_cast<uint8_t>(p[1])) << 7);
    p += 2;
    return true;
  }
  return read_long_varint(p, end, out);
}

// Zig-zag signed varints, Kafka's record encoding (docs/FORMAT.md §"Record batch"): n is stored as
// (n << 1) ^ (n >> 63), so small magnitudes of either sign take one byte.
inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t u) {
  return static_cast<int64_t>((u >> 1) ^ (0 - (u & 1)));
}

inline void append_zigzag(std::string& dst, int64_t v) {
  append_varint(dst, zigzag(v));
}
inline size_t zigzag_length(int64_t v) {
  return varint_length(zigzag(v));
}

// A zig-zag varint that must fit 32 bits (Kafka's "varint"), at p (not past end); advances p.
[[gnu::always_inline]] inline bool read_zigzag32(const char*& p, const char* end, int32_t& out) {
  uint64_t u = 0;
  if (!read_varint(p, end, u) || u > 0xFFFFFFFFu) return false;
  out = static_cast<int32_t>(unzigzag(u));
  return true;
}
// A zig-zag varint of 64 bits (Kafka's "varlong").
[[gnu::always_inline]] inline bool read_zigzag64(const char*& p, const char* end, int64_t& out) {
  uint64_t u = 0;
  if (!read_varint(p, end, u)) return false;
  out = unzigzag(u);
  return true;
}

// Reads a varint length then that many bytes at p, advancing p; false when either is short.
[[gnu::always_inline]] inline bool read_length_prefixed(const char*& p, const char* end,
                                                        std::string_view& out) {
  uint64_t len = 0;
  if (!read_varint(p, end, len) || len > static_cast<uint64_t>(end - p)) return false;
  out = std::string_view(p, static_cast<size_t>(len));
  p += len;
  return true;
}

// The same over a string_view, which is advanced past what was read.
inline bool get_varint(std::string_view& in, uint64_t& out) {
  const char* p = in.data();
  if (!read_varint(p, in.data() + in.size(), out)) return false;
  in.remove_prefix(static_cast<size_t>(p - in.data()));
  return true;
}

inline bool get_length_prefixed(std::string_view& in, std::string_view& out) {
  const char* p = in.data();
  if (!read_length_prefixed(p, in.data() + in.size(), out)) return false;
  in.remove_prefix(static_cast<size_t>(p - in.data()));
  return true;
}

}  // namespace streamd::coding
