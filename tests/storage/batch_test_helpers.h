// Helpers of the record batch tests (record_batch_test.cc, batch_builder_test.cc, record_reader_test.cc):
// byte edits in the manner of leveldb's log_test, and a decoder into owned values for comparisons.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/record_batch.h"
#include "server/storage/record_reader.h"

namespace streamd::testing {

// The append time the batches of these tests are sealed with.
constexpr Timestamp kTime(1'700'000'000'123'456);

inline void flip_byte(std::string& s, size_t pos) {
  s[pos] = static_cast<char>(s[pos] ^ 0x5A);
}
inline std::string truncate_tail(const std::string& s, size_t drop) {
  return s.substr(0, s.size() - drop);
}
inline void set_u32(std::string& s, size_t pos, uint32_t v) {
  coding::put_fixed32(s.data() + pos, v);
}
inline void set_u64(std::string& s, size_t pos, uint64_t v) {
  coding::put_fixed64(s.data() + pos, v);
}
// Recomputes the CRC after a deliberate edit, so the check under test is the one that fires.
inline void reseal_crc(std::string& s) {
  set_u32(s, batch_format::kCrcOffset, crc32c(std::string_view(s).substr(batch_format::kCrcCoveredFrom)));
}

inline BatchCheck check(std::string_view bytes, std::string* reason = nullptr) {
  BatchHeader h;
  return check_batch(bytes, h, reason);
}

// A record read back, owned, with everything the reader says of it.
struct DecodedHeader {
  std::string name;
  std::optional<std::string> value;  // nullopt: null
  bool operator==(const DecodedHeader&) const = default;
};
struct Decoded {
  uint64_t offset = 0;
  std::optional<std::string> key;      // nullopt: null
  std::optional<std::string> payload;  // nullopt: null
  std::vector<DecodedHeader> headers;
  std::optional<int64_t> create_time;
  bool operator==(const Decoded&) const = default;
};

struct Walk {
  std::vector<Decoded> records;
  bool error = false;
  std::string reason;
};

inline Walk walk(std::string_view batch) {
  RecordReader reader(batch);
  RecordView v;
  Walk out;
  while (reader.next(v)) {
    Decoded d;
    d.offset = v.offset.value;
    if (!v.key_null) d.key = std::string(v.key);
    if (!v.payload_null) d.payload = std::string(v.payload);
    for (const HeaderView& h : v.headers) {
      d.headers.push_back(
          {std::string(h.name), h.value_null ? std::nullopt : std::optional<std::string>(h.value)});
    }
    if (v.create_time) d.create_time = v.create_time->millis;
    out.records.push_back(std::move(d));
  }
  out.error = reader.error();
  out.reason = reader.reason();
  return out;
}

// Kafka's zig-zag varint of v, for hand-written version 2 record regions.
inline std::string zz(int64_t v) {
  std::string s;
  coding::append_zigzag(s, v);
  return s;
}
// A version 2 record: its length, then `body` (attributes onwards).
inline std::string v2_record(const std::string& body) {
  return zz(static_cast<int64_t>(body.size())) + body;
}

// Batch options spelled out (designated initializers that leave fields out do not pass -Wextra).
inline BatchOptions batch_options(bool create_times, ProducerFields producer = {},
                                  bool transactional = false) {
  BatchOptions o;
  o.create_times = create_times;
  o.producer = producer;
  o.transactional = transactional;
  return o;
}

}  // namespace streamd::testing
