#include "server/net/read_response.h"

#include <cstring>

#include "server/net/frame.h"
#include "server/net/wire_convert.h"
#include "server/storage/coding.h"
#include "streamd.pb.h"

namespace streamd {
namespace {

// Protobuf wire format (https://protobuf.dev/programming-guides/encoding/), written by hand for the one
// message that carries record bytes out: building a v1::ReadResponse would copy every key, payload and
// header into the message before serializing copied them again. Field numbers are proto/streamd.proto's.
// Like generated code, zero scalars and empty strings are omitted and Entry.record is always present,
// so the bytes equal what v1::Response::SerializeAsString() would produce (read_response_test.cc).
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

constexpr uint32_t tag(uint32_t field, uint32_t wire_type) {
  return (field << 3) | wire_type;
}

// int32 and int64 fields encode negative values as ten-byte varints of their 64-bit two's complement.
uint64_t as_varint(int64_t v) {
  return static_cast<uint64_t>(v);
}

using coding::varint_length;

size_t varint_field_size(uint32_t field, uint64_t v) {
  return v == 0 ? 0 : varint_length(tag(field, kVarint)) + varint_length(v);
}
size_t bytes_field_size(uint32_t field, size_t length, bool always = false) {
  return length == 0 && !always ? 0 : varint_length(tag(field, kLengthDelimited)) + varint_length(length) + length;
}

class Writer {
 public:
  explicit Writer(char* out) : p_(out) {}
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void varint_field(uint32_t field, uint64_t v) {
    if (v == 0) return;
    varint(tag(field, kVarint));
    varint(v);
  }
  // A length-delimited field's tag and length; the caller writes the content next.
  void open(uint32_t field, size_t length) {
    varint(tag(field, kLengthDelimited));
    varint(length);
  }
  void bytes_field(uint32_t field, std::string_view bytes) {
    if (bytes.empty()) return;
    open(field, bytes.size());
    raw(bytes);
  }
  void raw(std::string_view bytes) {
    std::memcpy(p_, bytes.data(), bytes.size());
    p_ += bytes.size();
  }
  char* position() const { return p_; }

 private:
  char* p_;
};

size_t header_size(const HeaderView& h) {
  return bytes_field_size(1, h.name.size()) + bytes_field_size(2, h.value.size());
}

size_t record_size_on_wire(const EntryView& e) {
  size_t n = bytes_field_size(1, e.key.size()) + bytes_field_size(2, e.payload.size());
  for (const HeaderView& h : e.headers) n += bytes_field_size(3, header_size(h), true);
  return n;
}

size_t entry_size(PartitionId partition, const EntryView& e, size_t record_bytes) {
  return varint_field_size(1, as_varint(partition.value)) + varint_field_size(2, e.offset.value) +
         varint_field_size(3, as_varint(e.appended_at.micros)) + bytes_field_size(4, record_bytes, true);
}

}  // namespace

std::string encode_read_frame(uint64_t request_id, const std::vector<PartitionRead>& reads,
                              ReadStats* stats) {
  // Pass 1: every nested length, innermost first (a length prefix precedes its content).
  std::vector<size_t> record_sizes;
  std::vector<size_t> partition_sizes(reads.size());
  std::vector<std::string> errors(reads.size());
  size_t read_body = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const PartitionRead& p = reads[i];
    size_t n = varint_field_size(1, as_varint(p.partition.value));
    if (!p.status.ok()) {
      v1::Error error;
      error_to_wire(p.status, &error);
      errors[i] = error.SerializeAsString();
      n += bytes_field_size(4, errors[i].size(), true);
    } else {
      for (const EntryView& e : p.result.entries) {
        const size_t r = record_size_on_wire(e);
        record_sizes.push_back(r);
        n += bytes_field_size(2, entry_size(p.partition, e, r), true);
        stats->records += 1;
        stats->bytes += record_size(e.key, e.payload, e.headers);
      }
      n += varint_field_size(3, p.result.next_from.value);
    }
    partition_sizes[i] = n;
    read_body += bytes_field_size(1, n, true);
  }
  const size_t body = varint_field_size(1, request_id) + bytes_field_size(16, read_body, true);

  // Pass 2: write, in field-number order as generated code does.
  std::string frame(kFrameHeaderBytes + body, '\0');
  write_frame_length(frame.data(), static_cast<uint32_t>(body));
  Writer w(frame.data() + kFrameHeaderBytes);
  w.varint_field(1, request_id);
  w.open(16, read_body);
  size_t next_record = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const PartitionRead& p = reads[i];
    w.open(1, partition_sizes[i]);
    w.varint_field(1, as_varint(p.partition.value));
    if (!p.status.ok()) {
      w.open(4, errors[i].size());
      w.raw(errors[i]);
      continue;
    }
    for (const EntryView& e : p.result.entries) {
      const size_t r = record_sizes[next_record++];
      w.open(2, entry_size(p.partition, e, r));
      w.varint_field(1, as_varint(p.partition.value));
      w.varint_field(2, e.offset.value);
      w.varint_field(3, as_varint(e.appended_at.micros));
      w.open(4, r);
      w.bytes_field(1, e.key);
      w.bytes_field(2, e.payload);
      for (const HeaderView& h : e.headers) {
        w.open(3, header_size(h));
        w.bytes_field(1, h.name);
        w.bytes_field(2, h.value);
      }
    }
    w.varint_field(3, p.result.next_from.value);
  }
  return frame;
}

}  // namespace streamd
