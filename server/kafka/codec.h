// The Kafka protocol's primitive types (docs/KAFKA.md §Wire), read from and written to plain bytes:
// big-endian fixed-width integers, zig-zag varints, length-prefixed strings, bytes and arrays, and
// the "compact" forms and tagged fields of flexible versions.
//
// Reader never reads past its span: a short or malformed field sets failed() and every later read
// returns a zero value, so a decoder checks once at the end instead of after every field. Writer
// appends to a string and can back-patch a length it did not know in advance.
// Both are plain values with no I/O, usable from any thread (and from a fuzzer).
//
// Flexible versions (KIP-482) change how every string, bytes field and array of a message is
// encoded — a length or count becomes an unsigned varint of n + 1, with 0 for null — and add tagged
// fields after each structure. A Reader or Writer made `flexible` applies that to the version-neutral
// calls (str, nullable_str, byte_string, nullable_byte_string, array, nullable_array, tags), so one
// handler serves an API's classic and flexible versions alike; the explicitly named calls (string,
// compact_string, …) keep their one encoding whatever the mode.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::kafka {

class Reader {
 public:
  explicit Reader(std::string_view bytes, bool flexible = false)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), flexible_(flexible) {}

  bool flexible() const { return flexible_; }
  void set_flexible(bool flexible) { flexible_ = flexible; }
  // Version-neutral fields: classic or compact as the mode says.
  std::string_view str() { return flexible_ ? compact_string() : string(); }
  std::optional<std::string_view> nullable_str() {
    return flexible_ ? compact_nullable_string() : nullable_string();
  }
  std::optional<std::string_view> nullable_byte_string() {
    return flexible_ ? compact_nullable_bytes() : nullable_bytes();
  }
  std::optional<int32_t> nullable_array(size_t min_element_bytes = 1) {
    return flexible_ ? compact_array_count(min_element_bytes) : array_count(min_element_bytes);
  }
  int32_t array(size_t min_element_bytes = 1);  // a non-null array's count (null fails)
  // A structure's tagged fields: skipped in flexible mode (none is known here), absent otherwise.
  void tags() {
    if (flexible_) skip_tagged_fields();
  }

  int8_t i8() { return static_cast<int8_t>(fixed<uint8_t>()); }
  int16_t i16() { return static_cast<int16_t>(fixed<uint16_t>()); }
  int32_t i32() { return static_cast<int32_t>(fixed<uint32_t>()); }
  int64_t i64() { return static_cast<int64_t>(fixed<uint64_t>()); }
  uint32_t u32() { return fixed<uint32_t>(); }
  bool boolean() { return fixed<uint8_t>() != 0; }
  uint64_t uvarint();
  int32_t varint();   // zig-zag, at most 5 bytes
  int64_t varlong();  // zig-zag, at most 10 bytes

  std::string_view string();                    // INT16 length; null (-1) is refused
  std::optional<std::string_view> nullable_string();
  std::optional<std::string_view> nullable_bytes();  // INT32 length
  std::string_view compact_string();            // UNSIGNED_VARINT length + 1
  std::optional<std::string_view> compact_nullable_string();
  std::optional<std::string_view> compact_nullable_bytes();  // UNSIGNED_VARINT length + 1
  // INT32 count; null (-1) reads as nullopt. A count the remaining bytes cannot hold fails.
  std::optional<int32_t> array_count(size_t min_element_bytes = 1);
  // A non-null array's count (null fails).
  int32_t count(size_t min_element_bytes = 1);
  std::optional<int32_t> compact_array_count(size_t min_element_bytes = 1);
  // Skips a flexible version's tagged fields (none of them means anything to us).
  void skip_tagged_fields();
  std::string_view raw(size_t n);

  bool failed() const { return failed_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool at_end() const { return p_ == end_; }
  void fail() {
    failed_ = true;
    p_ = end_;
  }

 private:
  template <class T>
  T fixed() {
    if (remaining() < sizeof(T)) {
      fail();
      return 0;
    }
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    return v;
  }
  std::optional<int32_t> checked_count(int64_t n, size_t min_element_bytes);

  const char* p_;
  const char* end_;
  bool failed_ = false;
  bool flexible_ = false;
};

class Writer {
 public:
  explicit Writer(std::string& out, bool flexible = false) : out_(out), flexible_(flexible) {}

  bool flexible() const { return flexible_; }
  // Version-neutral fields (see Reader): classic or compact as the mode says.
  void str(std::string_view s) { flexible_ ? compact_string(s) : string(s); }
  void nullable_str(std::optional<std::string_view> s) { flexible_ ? compact_nullable_string(s) : nullable_string(s); }
  void byte_string(std::string_view b) { flexible_ ? compact_string(b) : bytes(b); }
  void nullable_byte_string(std::optional<std::string_view> b) {
    flexible_ ? compact_nullable_string(b) : nullable_bytes(b);
  }
  void array(int32_t n) { flexible_ ? compact_array_count(n) : array_count(n); }
  void null_array() { flexible_ ? uvarint(0) : i32(-1); }
  // A structure's tagged fields: none written (an empty set) in flexible mode, nothing otherwise.
  void tags() {
    if (flexible_) empty_tagged_fields();
  }

  void i8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void i16(int16_t v) { fixed(static_cast<uint16_t>(v)); }
  void i32(int32_t v) { fixed(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { fixed(static_cast<uint64_t>(v)); }
  void u32(uint32_t v) { fixed(v); }
  void boolean(bool v) { i8(v ? 1 : 0); }
  void uvarint(uint64_t v);
  void varint(int32_t v) { uvarint(static_cast<uint32_t>((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31))); }
  void varlong(int64_t v) { uvarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }

  void string(std::string_view s);
  void nullable_string(std::optional<std::string_view> s);
  void bytes(std::string_view b);  // INT32 length
  void nullable_bytes(std::optional<std::string_view> b);
  void compact_string(std::string_view s);
  void compact_nullable_string(std::optional<std::string_view> s);
  void array_count(int32_t n) { i32(n); }
  void compact_array_count(int32_t n) { uvarint(static_cast<uint64_t>(n) + 1); }
  void empty_tagged_fields() { uvarint(0); }
  void raw(std::string_view b) { out_.append(b); }

  size_t size() const { return out_.size(); }
  // Reserves an INT32 to be filled by patch_i32 once the value is known.
  size_t placeholder_i32() {
    const size_t at = out_.size();
    i32(0);
    return at;
  }
  void patch_i32(size_t at, int32_t v);
  std::string& out() { return out_; }

 private:
  template <class T>
  void fixed(T v) {
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    out_.append(buf, sizeof(T));
  }
  std::string& out_;
  bool flexible_ = false;
};

// Big-endian helpers for code that writes into a pre-sized buffer.
inline void put_be32(char* dst, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(dst, &v, 4);
}
inline uint32_t get_be32(const char* src) {
  uint32_t v;
  std::memcpy(&v, src, 4);
  return __builtin_bswap32(v);
}

}  // namespace streamd::kafka
