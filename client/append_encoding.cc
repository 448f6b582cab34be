#include "client/append_encoding.h"

namespace streamd::client {
namespace {

// Wire types of the protobuf encoding: 0 varint, 2 length-delimited.
constexpr uint8_t tag(int field, int wire_type) {
  return static_cast<uint8_t>((field << 3) | wire_type);
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A length-delimited field; proto3 leaves empty bytes and strings out, as the generated code does.
size_t bytes_field_size(std::string_view value) {
  return value.empty() ? 0 : 1 + varint_size(value.size()) + value.size();
}

void put_bytes_field(std::string* out, int field, std::string_view value) {
  if (value.empty()) return;
  out->push_back(static_cast<char>(tag(field, 2)));
  put_varint(out, value.size());
  out->append(value);
}

// A varint field; proto3 leaves zero out, as the generated code does.
void put_varint_field(std::string* out, int field, uint64_t value) {
  if (value == 0) return;
  out->push_back(static_cast<char>(tag(field, 0)));
  put_varint(out, value);
}

}  // namespace

void append_encoded_record(std::string* out, const Record& record) {
  size_t size = bytes_field_size(record.key) + bytes_field_size(record.payload);
  for (const Header& h : record.headers) {
    const size_t header = bytes_field_size(h.name) + bytes_field_size(h.value);
    size += 1 + varint_size(header) + header;
  }
  out->reserve(out->size() + 1 + varint_size(size) + size);
  out->push_back(static_cast<char>(tag(2, 2)));  // AppendRequest.records
  put_varint(out, size);
  put_bytes_field(out, 1, record.key);
  put_bytes_field(out, 2, record.payload);
  for (const Header& h : record.headers) {
    out->push_back(static_cast<char>(tag(3, 2)));  // Record.headers
    put_varint(out, bytes_field_size(h.name) + bytes_field_size(h.value));
    put_bytes_field(out, 1, h.name);
    put_bytes_field(out, 2, h.value);
  }
}

std::string encode_append_head(std::string_view stream, size_t encoded_records_size,
                               const std::optional<AppendStamp>& stamp) {
  // AppendRequest.producer (a ProducerSequence, whose zero fields proto3 leaves out) and the partition,
  // an optional field, written even when 0.
  std::string tail;
  if (stamp) {
    std::string producer;
    put_varint_field(&producer, 1, static_cast<uint64_t>(stamp->producer_id));
    put_varint_field(&producer, 2, static_cast<uint64_t>(static_cast<int64_t>(stamp->epoch)));
    put_varint_field(&producer, 3, static_cast<uint64_t>(static_cast<int64_t>(stamp->sequence)));
    tail.push_back(static_cast<char>(tag(3, 2)));
    put_varint(&tail, producer.size());
    tail += producer;
    tail.push_back(static_cast<char>(tag(4, 0)));
    put_varint(&tail, static_cast<uint64_t>(static_cast<int64_t>(stamp->partition)));
    put_bytes_field(&tail, 5, stamp->transactional_id);
  }
  const size_t append_size = bytes_field_size(stream) + tail.size() + encoded_records_size;
  std::string out;
  out.reserve(1 + varint_size(append_size) + bytes_field_size(stream) + tail.size());
  out.push_back(static_cast<char>(tag(15, 2)));  // Request.append
  put_varint(&out, append_size);
  put_bytes_field(&out, 1, stream);
  out += tail;
  return out;
}

}  // namespace streamd::client
