// WireReader: a cursor over protobuf wire-format bytes, for the few answers the client decodes by
// hand (response_decoding.h). It reads tags, varints and length-delimited fields and skips any field
// it is not asked about, as a generated parser does. Every read is bounds-checked: malformed bytes
// make it return false, never read past the end. Not thread-safe; a value type over borrowed bytes.
#pragma once

#include <cstdint>
#include <string_view>

namespace streamd::client {

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return pos_ == bytes_.size(); }
  // The next field's number and wire type; false at malformed input (field 0 included).
  bool next_field(uint32_t* field, uint32_t* wire_type) {
    uint64_t tag;
    if (!varint(&tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return true;
  }
  bool varint(uint64_t* value) {
    // One-byte varints (tags, small lengths) are most of what the client reads.
    if (pos_ < bytes_.size() && (static_cast<uint8_t>(bytes_[pos_]) & 0x80u) == 0) {
      *value = static_cast<uint8_t>(bytes_[pos_++]);
      return true;
    }
    return long_varint(value);
  }
  // A length-delimited value (bytes, string or embedded message).
  bool length_delimited(std::string_view* value) {
    uint64_t length;
    if (!varint(&length) || length > bytes_.size() - pos_) return false;
    *value = bytes_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return true;
  }
  // Skips the value of a field of `wire_type` (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
  bool skip(uint32_t wire_type);

 private:
  bool long_varint(uint64_t* value);

  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace streamd::client
