#include "client/frame_codec.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd::client {
namespace {

std::string frame(std::string_view body) {
  std::string out(kFrameHeaderBytes, '\0');
  write_frame_length(out.data(), static_cast<uint32_t>(body.size()));
  out.append(body);
  return out;
}

TEST_CASE("frames are cut out of bytes arriving one at a time") {
  FrameDecoder decoder(1024);
  const std::string bytes = frame("hello") + frame("") + frame(std::string(300, 'x'));
  std::vector<std::string> bodies;
  for (char c : bytes) {
    decoder.feed(std::string_view(&c, 1));
    std::string_view body;
    while (decoder.next(&body) == FrameDecoder::State::kFrame) bodies.emplace_back(body);
  }
  REQUIRE(bodies.size() == 3);
  CHECK(bodies[0] == "hello");
  CHECK(bodies[1].empty());
  CHECK(bodies[2] == std::string(300, 'x'));
  CHECK(decoder.buffered() == 0);
}

TEST_CASE("several frames in one read come out in order") {
  FrameDecoder decoder(1024);
  decoder.feed(frame("a") + frame("bb") + frame("ccc").substr(0, 5));
  std::string_view body;
  REQUIRE(decoder.next(&body) == FrameDecoder::State::kFrame);
  CHECK(body == "a");
  REQUIRE(decoder.next(&body) == FrameDecoder::State::kFrame);
  CHECK(body == "bb");
  CHECK(decoder.next(&body) == FrameDecoder::State::kNeedMore);
  decoder.feed("cc");
  REQUIRE(decoder.next(&body) == FrameDecoder::State::kFrame);
  CHECK(body == "ccc");
}

TEST_CASE("a header over the limit is refused before its body arrives") {
  FrameDecoder decoder(16);
  decoder.feed(frame(std::string(16, 'y')));
  std::string_view body;
  REQUIRE(decoder.next(&body) == FrameDecoder::State::kFrame);
  char header[4];
  write_frame_length(header, 17);
  decoder.feed(std::string_view(header, 4));
  uint64_t announced = 0;
  CHECK(decoder.next(&body, &announced) == FrameDecoder::State::kTooLarge);
  CHECK(announced == 17);
}

TEST_CASE("prepare and commit write in place") {
  FrameDecoder decoder(64);
  std::string bytes = frame("in place");
  char* space = decoder.prepare(bytes.size());
  std::copy(bytes.begin(), bytes.end(), space);
  decoder.commit(bytes.size());
  std::string_view body;
  REQUIRE(decoder.next(&body) == FrameDecoder::State::kFrame);
  CHECK(body == "in place");
}

}  // namespace
}  // namespace streamd::client
