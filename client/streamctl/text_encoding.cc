#include "client/streamctl/text_encoding.h"

#include <array>
#include <cstdint>

namespace streamd::streamctl {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_reverse() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kReverse = make_reverse();

bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

size_t utf8_sequence_length(std::string_view bytes) {
  if (bytes.empty()) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  if (b[0] < 0x80) return 1;
  if (b[0] >= 0xC2 && b[0] <= 0xDF) return n >= 2 && is_continuation(b[1]) ? 2 : 0;
  if (b[0] >= 0xE0 && b[0] <= 0xEF) {
    if (n < 3 || !is_continuation(b[1]) || !is_continuation(b[2])) return 0;
    if (b[0] == 0xE0 && b[1] < 0xA0) return 0;   // overlong
    if (b[0] == 0xED && b[1] >= 0xA0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (b[0] >= 0xF0 && b[0] <= 0xF4) {
    if (n < 4 || !is_continuation(b[1]) || !is_continuation(b[2]) || !is_continuation(b[3])) return 0;
    if (b[0] == 0xF0 && b[1] < 0x90) return 0;   // overlong
    if (b[0] == 0xF4 && b[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    // ASCII runs are the common case; skip them without the full decoder.
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t length = utf8_sequence_length(bytes.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{b[i]} << 16) | (uint32_t{b[i + 1]} << 8) | b[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{b[i]} << 16;
    if (rest == 2) v |= uint32_t{b[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pad = 0;
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const auto c = static_cast<unsigned char>(text[i + j]);
      if (c == '=' && last && j >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad > 0 || kReverse[c] < 0) return std::nullopt;
      v = (v << 6) | static_cast<uint32_t>(kReverse[c]);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace streamd::streamctl
