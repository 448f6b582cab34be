#include "proto/framing.h"

#include <catch2/catch.hpp>

namespace streamd {
namespace {

TEST_CASE("frame lengths are four bytes big-endian", "[frame]") {
  char header[4];
  write_frame_length(header, 0x01020304u);
  CHECK(static_cast<unsigned char>(header[0]) == 0x01);
  CHECK(static_cast<unsigned char>(header[3]) == 0x04);
  CHECK(read_frame_length(header) == 0x01020304u);
  write_frame_length(header, 0xFFFFFFFFu);
  CHECK(read_frame_length(header) == 0xFFFFFFFFu);
}

TEST_CASE("the length prefix is big-endian") {
  char header[4];
  write_frame_length(header, 0x01020304u);
  CHECK(header[0] == 1);
  CHECK(header[1] == 2);
  CHECK(header[2] == 3);
  CHECK(header[3] == 4);
  CHECK(read_frame_length(header) == 0x01020304u);
  write_frame_length(header, 0xfffffffeu);
  CHECK(read_frame_length(header) == 0xfffffffeu);
}

}  // namespace
}  // namespace streamd
