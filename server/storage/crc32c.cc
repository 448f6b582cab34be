#include "server/storage/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace streamd {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reversed Castagnoli polynomial

// Slicing-by-8 tables, built at compile time.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

constexpr auto kTables = make_tables();

// Polynomials modulo the CRC's, in the register's reflected order (bit 31 is x^0): a * b.
constexpr uint32_t multiply_mod(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial, k = 0..63: x^(8n) is the product of those whose k - 3 are n's bits.
constexpr std::array<uint32_t, 64> make_powers() {
  std::array<uint32_t, 64> p{};
  p[0] = 1u << 30;  // x^1
  for (size_t k = 1; k < p.size(); ++k) p[k] = multiply_mod(p[k - 1], p[k - 1]);
  return p;
}

constexpr auto kPowers = make_powers();

#if defined(__x86_64__)
// The crc32 instruction has a latency of three cycles and a throughput of one, so a single dependency
// chain leaves two thirds of the unit idle. Long inputs are therefore cut into three blocks whose CRCs
// run interleaved, then combined: CRC(A || B) = shift_|B|(CRC(A)) ^ CRC(B), where shift_n is the
// linear map "extend over n zero bytes", applied through four 256-entry tables.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

struct ShiftTable {
  uint32_t t[4][256];
  uint32_t apply(uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

// shift_n is linear over GF(2): built from its image of each of the 32 one-bit registers.
__attribute__((target("sse4.2"))) ShiftTable make_shift_table(size_t n) {
  uint32_t basis[32];
  for (int bit = 0; bit < 32; ++bit) {
    uint64_t c = 1u << bit;
    for (size_t i = 0; i < n / 8; ++i) c = _mm_crc32_u64(c, 0);
    basis[bit] = static_cast<uint32_t>(c);
  }
  ShiftTable s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t v = 0; v < 256; ++v) {
      uint32_t image = 0;
      for (int bit = 0; bit < 8; ++bit) {
        if ((v >> bit) & 1) image ^= basis[8 * k + bit];
      }
      s.t[k][v] = image;
    }
  }
  return s;
}

struct ShiftTables {
  ShiftTable long_block = make_shift_table(kLongBlock);
  ShiftTable short_block = make_shift_table(kShortBlock);
};

// Three interleaved chains over consecutive blocks of `block` bytes, while at least 3 blocks remain.
__attribute__((target("sse4.2"))) uint64_t crc_triples(uint64_t c, const unsigned char*& p, size_t& n,
                                                      size_t block, const ShiftTable& shift) {
  while (n >= 3 * block) {
    uint64_t c1 = 0, c2 = 0;
    for (const unsigned char* end = p + block; p < end; p += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p, 8);
      std::memcpy(&w1, p + block, 8);
      std::memcpy(&w2, p + 2 * block, 8);
      c = _mm_crc32_u64(c, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    c = shift.apply(static_cast<uint32_t>(c)) ^ c1;
    c = shift.apply(static_cast<uint32_t>(c)) ^ c2;
    p += 2 * block;
    n -= 3 * block;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const void* data, size_t n) {
  static const ShiftTables tables;
  auto p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  c = crc_triples(c, p, n, kLongBlock, tables.long_block);
  c = crc_triples(c, p, n, kShortBlock, tables.short_block);
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool cpu_has_sse42() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_SSE4_2) != 0;
}
#endif

using CrcFn = uint32_t (*)(uint32_t, const void*, size_t);

CrcFn choose() {
#if defined(__x86_64__)
  if (cpu_has_sse42()) return crc32c_sse42;
#endif
  return crc32c_extend_portable;
}

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n) {
  auto p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only, as the rest of the format code assumes
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

uint32_t crc32c_shift(uint32_t crc, uint64_t n) {
  // Carrying a CRC past n bytes multiplies its register by x^(8n); the pre- and post-inversions of
  // CRC(A || B) and CRC(B) cancel out, leaving the plain product.
  for (size_t k = 3; n != 0 && k < kPowers.size(); ++k, n >>= 1) {
    if (n & 1) crc = multiply_mod(kPowers[k], crc);
  }
  return crc;
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  static const CrcFn fn = choose();
  return fn(crc, data, n);
}

}  // namespace streamd
