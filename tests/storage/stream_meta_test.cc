#include "server/storage/stream_meta.h"

#include <catch2/catch.hpp>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

StreamMeta sample() {
  StreamMeta meta;
  meta.policy.partitions = 6;
  meta.policy.max_record_bytes = 1000;
  meta.policy.retain_for = milliseconds(3'600'000);
  meta.policy.retain_bytes = 5 << 20;
  meta.policy.max_bytes = 7 << 20;
  meta.policy.block_timeout = milliseconds(250);
  meta.policy.segment_bytes = 1 << 20;
  meta.policy.compact_after = milliseconds(60'000);
  meta.policy.timestamp_type = TimestampType::kCreateTime;
  meta.created_at = Timestamp(1'700'000'000'123'456);
  return meta;
}

TEST_CASE("stream metadata encodes to a fixed size and decodes to the same value") {
  std::string bytes = encode_stream_meta(sample());
  CHECK(bytes.size() == stream_meta_format::kSize);
  auto decoded = decode_stream_meta(bytes, "p");
  REQUIRE(decoded.ok());
  CHECK(*decoded == sample());
}

TEST_CASE("each timestamp type round trips") {
  for (TimestampType type : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
    StreamMeta meta = sample();
    meta.policy.timestamp_type = type;
    auto decoded = decode_stream_meta(encode_stream_meta(meta), "p");
    REQUIRE(decoded.ok());
    CHECK(decoded->policy.timestamp_type == type);
  }
}

// What version 1 wrote: version 2's bytes without the timestamp type, under version 1.
std::string version1_bytes(const StreamMeta& meta) {
  std::string bytes = encode_stream_meta(meta);
  bytes.resize(stream_meta_format::kSizeV1 - 4);
  bytes[4] = 1;
  char crc[4];
  coding::put_fixed32(crc, crc32c(bytes));
  return bytes.append(crc, 4);
}

TEST_CASE("a version 1 file reads with every field, its stream LogAppendTime as it always was") {
  const std::string bytes = version1_bytes(sample());
  REQUIRE(bytes.size() == 77);
  auto decoded = decode_stream_meta(bytes, "p");
  REQUIRE(decoded.ok());
  StreamMeta expected = sample();
  expected.policy.timestamp_type = TimestampType::kLogAppendTime;
  CHECK(*decoded == expected);
  // Version 1's size under version 2's number, and the reverse, are damage.
  std::string relabelled = bytes;
  relabelled[4] = 2;
  CHECK_FALSE(decode_stream_meta(relabelled, "p").ok());
  std::string v2 = encode_stream_meta(sample());
  v2[4] = 1;
  CHECK_FALSE(decode_stream_meta(v2, "p").ok());
}

TEST_CASE("a flipped byte anywhere in the metadata is refused as damaged") {
  std::string bytes = encode_stream_meta(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    auto r = decode_stream_meta(damaged, "dir/STREAM");
    INFO("byte " << i);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kStreamBackendFailed);
    CHECK(r.status().field("path") == "dir/STREAM");
  }
}

TEST_CASE("metadata of the wrong size is refused with the size in the reason") {
  std::string bytes = encode_stream_meta(sample());
  auto r = decode_stream_meta(bytes.substr(0, bytes.size() - 1), "p");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().field("reason") == "size 77, expected 78");
  CHECK_FALSE(decode_stream_meta(bytes + "x", "p").ok());
  CHECK_FALSE(decode_stream_meta("", "p").ok());
}

TEST_CASE("metadata written to a directory reads back, and a rewrite replaces it whole") {
  TempDir dir;
  REQUIRE(write_stream_meta(posix_file_system(), dir.path(), sample()).ok());
  auto first = read_stream_meta(posix_file_system(), dir.path());
  REQUIRE(first.ok());
  CHECK(*first == sample());

  StreamMeta changed = sample();
  changed.policy.retain_bytes = 42;
  REQUIRE(write_stream_meta(posix_file_system(), dir.path(), changed).ok());
  auto second = read_stream_meta(posix_file_system(), dir.path());
  REQUIRE(second.ok());
  CHECK(*second == changed);
  CHECK_FALSE(posix_file_system().exists(dir.file("STREAM.tmp")));
}

TEST_CASE("reading metadata from a directory without it fails with the path") {
  TempDir dir;
  auto r = read_stream_meta(posix_file_system(), dir.path());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kStreamBackendFailed);
  CHECK(r.status().field("path") == dir.file("STREAM"));
}

}  // namespace
}  // namespace streamd
