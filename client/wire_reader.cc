#include "client/wire_reader.h"

namespace streamd::client {

bool WireReader::long_varint(uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes_[pos_++]);
    result |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

bool WireReader::skip(uint32_t wire_type) {
  uint64_t ignored;
  std::string_view ignored_bytes;
  switch (wire_type) {
    case 0:
      return varint(&ignored);
    case 1:
      if (bytes_.size() - pos_ < 8) return false;
      pos_ += 8;
      return true;
    case 2:
      return length_delimited(&ignored_bytes);
    case 5:
      if (bytes_.size() - pos_ < 4) return false;
      pos_ += 4;
      return true;
    default:
      return false;  // groups (3, 4) are not used by proto3
  }
}

}  // namespace streamd::client
