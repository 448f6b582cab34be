#include "server/storage/crc32c.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

namespace streamd {
namespace {

TEST_CASE("crc32c check value and empty input") {
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c_extend(0, nullptr, 0) == 0u);
  CHECK(crc32c_extend_portable(0, "123456789", 9) == 0xE3069283u);
}

TEST_CASE("crc32c RFC 3720 B.4 vectors") {
  std::string zeros(32, '\0');
  std::string ones(32, '\xFF');
  std::string ascending(32, '\0');
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  CHECK(crc32c(ones) == 0x62A8AB43u);
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  CHECK(crc32c(descending) == 0x113FDB5Cu);
  CHECK(crc32c_extend_portable(0, zeros.data(), zeros.size()) == 0x8A9136AAu);
  CHECK(crc32c_extend_portable(0, ones.data(), ones.size()) == 0x62A8AB43u);
  CHECK(crc32c_extend_portable(0, ascending.data(), ascending.size()) == 0x46DD794Eu);
}

TEST_CASE("crc32c dispatch agrees with the portable path at every length and alignment") {
  std::mt19937 rng(12345);
  // Long enough for the hardware path's interleaved blocks of 3 x 8192 and 3 x 256 bytes.
  constexpr size_t kMax = 3 * 8192 * 2 + 3 * 256 + 64;
  std::vector<char> buf(kMax + 16);
  for (auto& c : buf) c = static_cast<char>(rng());
  std::uniform_int_distribution<size_t> length(0, kMax);
  for (int round = 0; round < 500; ++round) {
    size_t align = static_cast<size_t>(round) % 16;
    static constexpr size_t kEdges[] = {767, 768, 769, 775, 776, 24575, 24576, 24577, 24584, 25344, 49152, 49920};
    size_t n = round < 64   ? static_cast<size_t>(round)
               : round < 76 ? kEdges[round - 64]
                            : length(rng);
    INFO("align " << align << " length " << n);
    const char* p = buf.data() + align;
    REQUIRE(crc32c_extend(0, p, n) == crc32c_extend_portable(0, p, n));
    REQUIRE(crc32c_extend(0x12345678u, p, n) == crc32c_extend_portable(0x12345678u, p, n));
  }
}

TEST_CASE("crc32c extended in pieces equals crc32c of the whole") {
  std::mt19937 rng(7);
  std::string data(1000, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  const uint32_t whole = crc32c(data);
  for (size_t split :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{500}, size_t{999}, size_t{1000}}) {
    INFO("split at " << split);
    uint32_t c = crc32c_extend(0, data.data(), split);
    CHECK(crc32c_extend(c, data.data() + split, data.size() - split) == whole);
    uint32_t p = crc32c_extend_portable(0, data.data(), split);
    CHECK(crc32c_extend_portable(p, data.data() + split, data.size() - split) == whole);
  }
  uint32_t bytewise = 0;
  for (char ch : data) bytewise = crc32c_extend(bytewise, &ch, 1);
  CHECK(bytewise == whole);
}

TEST_CASE("crc32c notices a single flipped bit") {
  std::string data = "the quick brown fox jumps over the lazy dog";
  const uint32_t before = crc32c(data);
  for (size_t i = 0; i < data.size(); ++i) {
    std::string copy = data;
    copy[i] = static_cast<char>(copy[i] ^ 0x01);
    CHECK(crc32c(copy) != before);
  }
}

TEST_CASE("crc32c_shift carries a CRC past bytes it never reads") {
  std::mt19937 rng(777);
  for (size_t a_len : {0, 1, 40, 61, 5000}) {
    for (size_t b_len : {0, 1, 7, 8, 255, 4096, 100'000, 1 << 20}) {
      std::string a(a_len, '\0');
      std::string b(b_len, '\0');
      for (char& c : a) c = static_cast<char>(rng());
      for (char& c : b) c = static_cast<char>(rng());
      INFO("|A| = " << a_len << ", |B| = " << b_len);
      CHECK(crc32c(a + b) == (crc32c_shift(crc32c(a), b.size()) ^ crc32c(b)));
    }
  }
  CHECK(crc32c_shift(0, 1u << 30) == 0u);
  CHECK(crc32c_shift(0x12345678u, 0) == 0x12345678u);
}

}  // namespace
}  // namespace streamd
