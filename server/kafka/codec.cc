#include "server/kafka/codec.h"

namespace streamd::kafka {

uint64_t Reader::uvarint() {
  uint64_t result = 0;
  for (unsigned shift = 0; shift <= 63; shift += 7) {
    if (p_ == end_) break;
    const auto byte = static_cast<uint8_t>(*p_++);
    if (shift == 63 && byte > 1) break;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return result;
  }
  fail();
  return 0;
}

int32_t Reader::varint() {
  const uint64_t raw = uvarint();
  if (raw > 0xffffffffull) {
    fail();
    return 0;
  }
  const auto u = static_cast<uint32_t>(raw);
  return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
}

int64_t Reader::varlong() {
  const uint64_t u = uvarint();
  return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

std::string_view Reader::raw(size_t n) {
  if (remaining() < n) {
    fail();
    return {};
  }
  std::string_view out(p_, n);
  p_ += n;
  return out;
}

std::string_view Reader::string() {
  const int16_t n = i16();
  if (n < 0) {
    fail();
    return {};
  }
  return raw(static_cast<size_t>(n));
}

std::optional<std::string_view> Reader::nullable_string() {
  const int16_t n = i16();
  if (failed_) return std::nullopt;
  if (n == -1) return std::nullopt;
  if (n < 0) {
    fail();
    return std::nullopt;
  }
  return raw(static_cast<size_t>(n));
}

std::optional<std::string_view> Reader::nullable_bytes() {
  const int32_t n = i32();
  if (failed_) return std::nullopt;
  if (n == -1) return std::nullopt;
  if (n < 0) {
    fail();
    return std::nullopt;
  }
  return raw(static_cast<size_t>(n));
}

std::string_view Reader::compact_string() {
  const uint64_t n = uvarint();
  if (n == 0) {
    fail();
    return {};
  }
  return raw(static_cast<size_t>(n - 1));
}

std::optional<std::string_view> Reader::compact_nullable_string() {
  const uint64_t n = uvarint();
  if (failed_ || n == 0) return std::nullopt;
  return raw(static_cast<size_t>(n - 1));
}

std::optional<std::string_view> Reader::compact_nullable_bytes() {
  return compact_nullable_string();  // the same encoding: a length + 1, 0 for null
}

int32_t Reader::array(size_t min_element_bytes) {
  if (!flexible_) return count(min_element_bytes);
  auto n = compact_array_count(min_element_bytes);
  if (!n) fail();
  return n.value_or(0);
}

std::optional<int32_t> Reader::checked_count(int64_t n, size_t min_element_bytes) {
  if (failed_) return std::nullopt;
  if (n < 0 || static_cast<uint64_t>(n) * min_element_bytes > remaining()) {
    fail();
    return std::nullopt;
  }
  return static_cast<int32_t>(n);
}

std::optional<int32_t> Reader::array_count(size_t min_element_bytes) {
  const int32_t n = i32();
  if (failed_ || n == -1) return std::nullopt;
  return checked_count(n, min_element_bytes);
}

int32_t Reader::count(size_t min_element_bytes) {
  const int32_t n = i32();
  auto checked = checked_count(n, min_element_bytes);
  return checked.value_or(0);
}

std::optional<int32_t> Reader::compact_array_count(size_t min_element_bytes) {
  const uint64_t n = uvarint();
  if (failed_ || n == 0) return std::nullopt;
  if (n - 1 > 0x7fffffff) {
    fail();
    return std::nullopt;
  }
  return checked_count(static_cast<int64_t>(n - 1), min_element_bytes);
}

void Reader::skip_tagged_fields() {
  const uint64_t n = uvarint();
  for (uint64_t i = 0; i < n && !failed_; ++i) {
    uvarint();  // tag
    const uint64_t size = uvarint();
    raw(static_cast<size_t>(size));
  }
}

void Writer::uvarint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void Writer::string(std::string_view s) {
  i16(static_cast<int16_t>(s.size()));
  out_.append(s);
}

void Writer::nullable_string(std::optional<std::string_view> s) {
  if (!s) return i16(-1);
  string(*s);
}

void Writer::bytes(std::string_view b) {
  i32(static_cast<int32_t>(b.size()));
  out_.append(b);
}

void Writer::nullable_bytes(std::optional<std::string_view> b) {
  if (!b) return i32(-1);
  bytes(*b);
}

void Writer::compact_string(std::string_view s) {
  uvarint(s.size() + 1);
  out_.append(s);
}

void Writer::compact_nullable_string(std::optional<std::string_view> s) {
  if (!s) return uvarint(0);
  compact_string(*s);
}

void Writer::patch_i32(size_t at, int32_t v) {
  put_be32(out_.data() + at, static_cast<uint32_t>(v));
}

}  // namespace streamd::kafka
