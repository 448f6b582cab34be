// Tests of the placement rule (proto/placement.h), which the broker and the client both use.
#include "proto/placement.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd {
namespace {

TEST_CASE("fnv1a32 published vectors") {
  CHECK(placement::fnv1a32("") == 0x811c9dc5u);
  CHECK(placement::fnv1a32("a") == 0xe40c292cu);
  CHECK(placement::fnv1a32("foobar") == 0xbf9cf968u);
}

TEST_CASE("fnv1a32 reads bytes as unsigned") {
  // 0x811c9dc5 ^ 0xff, times the prime, modulo 2^32; a sign-extended byte would give another value.
  const uint32_t expected = (0x811c9dc5u ^ 0xffu) * 0x01000193u;
  CHECK(placement::fnv1a32(std::string(1, '\xff')) == expected);
  CHECK(placement::fnv1a32(std::string("\0", 1)) == 0x811c9dc5u * 0x01000193u);
}

TEST_CASE("partition_of is the hash modulo the count") {
  CHECK(placement::partition_of("foobar", 1) == 0);
  CHECK(placement::partition_of("foobar", 7) == static_cast<int32_t>(0xbf9cf968u % 7));
  CHECK(placement::partition_of("a", 16) == static_cast<int32_t>(0xe40c292cu % 16));
  CHECK(placement::partition_of("", 3) == static_cast<int32_t>(0x811c9dc5u % 3));
  // A large count keeps the unsigned modulo: the result stays in range.
  const int32_t big = 2'147'483'647;
  CHECK(placement::partition_of("foobar", big) == static_cast<int32_t>(0xbf9cf968u % static_cast<uint32_t>(big)));
  for (int i = 0; i < 1000; ++i) {
    int32_t p = placement::partition_of("key-" + std::to_string(i), 12);
    REQUIRE(p >= 0);
    REQUIRE(p < 12);
  }
}

TEST_CASE("partition_of reads a count below one as one") {
  CHECK(placement::partition_of("foobar", 0) == 0);
  CHECK(placement::partition_of("foobar", -1) == 0);
  CHECK(placement::partition_of("a", -2147483647 - 1) == 0);
}

// The client places keys with the very same function, so it cannot disagree with the broker.
static_assert(placement::partition_of("foobar", 7) == static_cast<int32_t>(0xbf9cf968u % 7));

TEST_CASE("partition_of is stable for a key") {
  CHECK(placement::partition_of("order-17", 8) == placement::partition_of(std::string("order-17"), 8));
}

}  // namespace
}  // namespace streamd
