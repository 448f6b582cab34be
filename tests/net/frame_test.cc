#include "server/net/frame.h"

#include <catch2/catch.hpp>

#include "streamd.pb.h"

namespace streamd {
namespace {

TEST_CASE("encode_frame prefixes one serialized message with its length", "[frame]") {
  v1::Request request;
  request.set_id(42);
  request.mutable_append()->set_stream("orders");
  request.mutable_append()->add_records()->set_payload(std::string(300, 'x'));
  const std::string frame = encode_frame(request);
  REQUIRE(frame.size() == kFrameHeaderBytes + request.ByteSizeLong());
  CHECK(read_frame_length(frame.data()) == request.ByteSizeLong());
  v1::Request parsed;
  REQUIRE(parsed.ParseFromArray(frame.data() + kFrameHeaderBytes, static_cast<int>(frame.size() - 4)));
  CHECK(parsed.id() == 42);
  CHECK(parsed.append().records(0).payload() == std::string(300, 'x'));
}

}  // namespace
}  // namespace streamd
