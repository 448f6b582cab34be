#include "server/net/frame.h"

#include <google/protobuf/message_lite.h>

namespace streamd {

std::string encode_frame(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  std::string frame(kFrameHeaderBytes + size, '\0');
  write_frame_length(frame.data(), static_cast<uint32_t>(size));
  // ByteSizeLong() cached every nested size; this pass only writes.
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(frame.data() + kFrameHeaderBytes));
  return frame;
}

}  // namespace streamd
