#include "proto/frame_reader.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

namespace streamd {
namespace {

std::string frame_of(std::string_view body) {
  std::string out(kFrameHeaderBytes, '\0');
  write_frame_length(out.data(), static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

// Feeds `bytes` in reads of at most `chunk` bytes, collecting every frame body handed out.
std::vector<std::string> feed(FrameReader& reader, std::string_view bytes, size_t chunk) {
  std::vector<std::string> frames;
  while (!bytes.empty()) {
    std::span<char> space = reader.writable();
    REQUIRE(!space.empty());
    const size_t n = std::min({chunk, space.size(), bytes.size()});
    std::memcpy(space.data(), bytes.data(), n);
    reader.commit(n);
    bytes.remove_prefix(n);
    for (;;) {
      auto next = reader.next();
      if (next.state != FrameReader::State::kFrame) break;
      frames.emplace_back(next.body);
    }
  }
  return frames;
}

TEST_CASE("FrameReader hands out pipelined frames in order whatever the read sizes", "[frame]") {
  const std::string stream =
      frame_of("first") + frame_of("") + frame_of(std::string(5000, 'b')) + frame_of("last");
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{4096}, stream.size()}) {
    FrameReader reader(1 << 20, 1024);
    auto frames = feed(reader, stream, chunk);
    INFO("chunk " << chunk);
    REQUIRE(frames.size() == 4);
    CHECK(frames[0] == "first");
    CHECK(frames[1].empty());
    CHECK(frames[2] == std::string(5000, 'b'));
    CHECK(frames[3] == "last");
    CHECK(reader.buffered() == 0);
  }
}

TEST_CASE("FrameReader refuses a length over the limit before allocating for it", "[frame]") {
  FrameReader reader(1 << 20, 1024);
  const std::string header = "\xFF\xFF\xFF\xFF";
  feed(reader, header, header.size());
  auto next = reader.next();
  CHECK(next.state == FrameReader::State::kTooLarge);
  CHECK(next.declared_length == 0xFFFFFFFFu);
  CHECK(reader.capacity() <= 2048);
  // Asking for room again still does not grow toward the declared length.
  CHECK(reader.writable().size() <= 2048);
}

TEST_CASE("FrameReader accepts a frame of exactly max_frame_bytes and refuses one byte more", "[frame]") {
  const size_t max = 4096;
  FrameReader ok(max, 512);
  auto frames = feed(ok, frame_of(std::string(max, 'a')), 100);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].size() == max);

  FrameReader over(max, 512);
  feed(over, frame_of(std::string(max + 1, 'a')).substr(0, 4), 4);
  CHECK(over.next().state == FrameReader::State::kTooLarge);
}

TEST_CASE("FrameReader keeps a truncated frame buffered and waits for the rest", "[frame]") {
  FrameReader reader(1 << 20, 1024);
  const std::string whole = frame_of("0123456789");
  auto frames = feed(reader, std::string_view(whole).substr(0, 8), 8);
  CHECK(frames.empty());
  CHECK(reader.next().state == FrameReader::State::kNeedMore);
  CHECK(reader.buffered() == 8);
  frames = feed(reader, std::string_view(whole).substr(8), 100);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0] == "0123456789");
}

TEST_CASE("FrameReader gives back the memory of a large frame once drained", "[frame]") {
  FrameReader reader(1 << 22, 1024);
  feed(reader, frame_of(std::string(1 << 20, 'z')), 65536);
  CHECK(reader.buffered() == 0);
  reader.writable();
  CHECK(reader.capacity() <= 4096);
}

}  // namespace
}  // namespace streamd
