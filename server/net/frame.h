// The broker's side of the framing (proto/framing.h): a message serialized straight into its frame.
// Frames are read with proto/frame_reader.h.
#pragma once

#include <string>

#include "proto/frame_reader.h"
#include "proto/framing.h"

namespace google::protobuf {
class MessageLite;
}

namespace streamd {

// Serializes `message` once, straight into a buffer that starts with its frame header.
std::string encode_frame(const google::protobuf::MessageLite& message);

}  // namespace streamd
