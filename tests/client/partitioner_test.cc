#include "client/partitioner.h"

#include <catch2/catch.hpp>
#include <string>

// The broker's placement, compiled into this test only, to hold the two copies to one answer.
#include "server/storage/partitioner.h"

namespace streamd::client {
namespace {

TEST_CASE("fnv1a32 published vectors") {
  CHECK(fnv1a32("") == 0x811c9dc5u);
  CHECK(fnv1a32("a") == 0xe40c292cu);
  CHECK(fnv1a32("foobar") == 0xbf9cf968u);
}

TEST_CASE("fnv1a32 reads bytes as unsigned") {
  CHECK(fnv1a32(std::string(1, '\xff')) == (0x811c9dc5u ^ 0xffu) * 0x01000193u);
  CHECK(fnv1a32(std::string("\0", 1)) == 0x811c9dc5u * 0x01000193u);
}

TEST_CASE("partition_of is the hash modulo the count, a count below one read as one") {
  CHECK(partition_of("foobar", 1) == 0);
  CHECK(partition_of("foobar", 7) == static_cast<int32_t>(0xbf9cf968u % 7));
  CHECK(partition_of("a", 16) == static_cast<int32_t>(0xe40c292cu % 16));
  CHECK(partition_of("", 3) == static_cast<int32_t>(0x811c9dc5u % 3));
  CHECK(partition_of("foobar", 2'147'483'647) == static_cast<int32_t>(0xbf9cf968u % 2'147'483'647u));
  CHECK(partition_of("foobar", 0) == 0);
  CHECK(partition_of("foobar", -1) == 0);
  CHECK(partition_of("a", -2147483647 - 1) == 0);
}

TEST_CASE("the client places every key where the broker does") {
  for (int32_t count : {1, 2, 3, 7, 8, 12, 64, 1000}) {
    for (int i = 0; i < 2000; ++i) {
      std::string key = "key-" + std::to_string(i);
      if (i % 3 == 0) key.push_back(static_cast<char>(i % 256));
      REQUIRE(partition_of(key, count) == streamd::partition_of(key, count));
    }
  }
}

}  // namespace
}  // namespace streamd::client
