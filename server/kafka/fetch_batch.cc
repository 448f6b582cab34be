#include "server/kafka/fetch_batch.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "server/kafka/codec.h"
#include "server/kafka/record_batch.h"
#include "server/storage/crc32c.h"

namespace streamd::kafka {
namespace {

using namespace batch_v2;

size_t varint_size(uint64_t zigzagged) {
  size_t n = 1;
  while (zigzagged >= 0x80) {
    zigzagged >>= 7;
    ++n;
  }
  return n;
}
uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
size_t zz_size(int64_t v) {
  return varint_size(zigzag(v));
}

size_t nullable_size(bool null, std::string_view b) {
  return null ? 1 : zz_size(static_cast<int64_t>(b.size())) + b.size();
}

// Fetch answers are written straight into a buffer sized beforehand: K3 (docs/BENCHMARKS.md) spends
// its broker time here, and appending field by field to a string cost a third of it.
class RawWriter {
 public:
  explicit RawWriter(char* p) : p_(p) {}
  void i8(int8_t v) { *p_++ = static_cast<char>(v); }
  void i16(int16_t v) {
    const auto u = __builtin_bswap16(static_cast<uint16_t>(v));
    std::memcpy(p_, &u, 2);
    p_ += 2;
  }
  void i32(int32_t v) {
    put_be32(p_, static_cast<uint32_t>(v));
    p_ += 4;
  }
  void i64(int64_t v) {
    const auto u = __builtin_bswap64(static_cast<uint64_t>(v));
    std::memcpy(p_, &u, 8);
    p_ += 8;
  }
  void varint(int64_t v) {
    uint64_t u = zigzag(v);
    while (u >= 0x80) {
      *p_++ = static_cast<char>((u & 0x7f) | 0x80);
      u >>= 7;
    }
    *p_++ = static_cast<char>(u);
  }
  void raw(std::string_view b) {
    if (!b.empty()) std::memcpy(p_, b.data(), b.size());
    p_ += b.size();
  }
  void nullable(bool null, std::string_view b) {
    if (null) {
      varint(-1);
      return;
    }
    varint(static_cast<int64_t>(b.size()));
    raw(b);
  }

 private:
  char* p_;
};

// The timestamps a re-encoded batch carries: its records' create times under CreateTime when it has
// them, else its append instant for every record (LogAppendTime).
struct Times {
  bool log_append_time = true;
  int64_t base = -1;
  int64_t max = -1;
};

Times times_of(const FetchBatch& b, TimestampType type) {
  Times t;
  if (b.count == 0) return t;
  const bool create = type == TimestampType::kCreateTime &&
                      std::all_of(b.entries, b.entries + b.count,
                                  [](const EntryView& e) { return e.create_time.has_value(); });
  if (!create) {
    t.base = t.max = b.entries[0].appended_at.micros / 1000;
    return t;
  }
  t.log_append_time = false;
  t.base = b.entries[0].create_time->millis;
  t.max = t.base;
  for (size_t i = 0; i < b.count; ++i) t.max = std::max(t.max, b.entries[i].create_time->millis);
  return t;
}

int64_t timestamp_delta(const EntryView& e, const Times& t) {
  if (t.log_append_time) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(e.create_time->millis) - static_cast<uint64_t>(t.base));
}

// The bytes of a record after its length varint.
size_t record_body_size(const EntryView& e, int64_t offset_delta, int64_t ts_delta) {
  size_t n = 1 + zz_size(ts_delta) + zz_size(offset_delta);  // attributes, timestamp delta, offset delta
  n += nullable_size(e.key_null, e.key) + nullable_size(e.payload_null, e.payload);
  n += zz_size(static_cast<int64_t>(e.headers.size()));
  for (const HeaderView& h : e.headers) {
    n += zz_size(static_cast<int64_t>(h.name.size())) + h.name.size() + nullable_size(h.value_null, h.value);
  }
  return n;
}

size_t reencoded_size(const FetchBatch& b, const Times& t) {
  size_t n = kHeaderSize;
  for (size_t i = 0; i < b.count; ++i) {
    const EntryView& e = b.entries[i];
    const size_t body =
        record_body_size(e, static_cast<int64_t>(e.offset.value) - b.base_offset, timestamp_delta(e, t));
    n += zz_size(static_cast<int64_t>(body)) + body;
  }
  return n;
}

void write_header(RawWriter& w, int64_t base_offset, size_t size, int16_t attributes, int64_t last_offset,
                  int64_t base_timestamp, int64_t max_timestamp, const ProducerFields& producer,
                  int32_t count) {
  w.i64(base_offset);
  w.i32(static_cast<int32_t>(size - kLogOverhead));
  w.i32(0);  // partition leader epoch
  w.i8(2);   // magic
  w.i32(0);  // crc, once the rest is written
  w.i16(attributes);
  w.i32(static_cast<int32_t>(last_offset - base_offset));
  w.i64(base_timestamp);
  w.i64(max_timestamp);
  w.i64(producer.id);
  w.i16(producer.epoch);
  w.i32(producer.base_sequence);
  w.i32(count);
}

}  // namespace

size_t fetch_batch_size(const FetchBatch& b, TimestampType type) {
  if (!b.stored.empty()) {
    const BatchHeader h = peek_header(b.stored);
    return kHeaderSize + (b.stored.size() - h.header_size());
  }
  return reencoded_size(b, times_of(b, type));
}

std::string_view spliced_region(const FetchBatch& b, size_t splice_from) {
  if (b.stored.empty()) return {};
  const std::string_view region = b.stored.substr(peek_header(b.stored).header_size());
  return region.size() >= splice_from ? region : std::string_view();
}

std::string_view encode_fetch_batch(std::string& out, const FetchBatch& b, TimestampType type,
                                    size_t splice_from) {
  const size_t start = out.size();
  if (!b.stored.empty()) {
    const BatchHeader h = peek_header(b.stored);
    const std::string_view region = b.stored.substr(h.header_size());
    const bool create = type == TimestampType::kCreateTime && h.create_times();
    int16_t attributes = create ? 0 : kLogAppendTime;
    if (h.transactional()) attributes |= kTransactional;
    if (h.control()) attributes |= kControl;
    const int64_t appended_ms = h.appended_at.micros / 1000;
    const size_t size = kHeaderSize + region.size();
    const std::string_view spliced = spliced_region(b, splice_from);
    out.resize(start + size - spliced.size());
    RawWriter w(out.data() + start);
    write_header(w, static_cast<int64_t>(h.base_offset.value), size, attributes, b.last_offset,
                 create ? h.base_timestamp : appended_ms, create ? h.max_timestamp : appended_ms, h.producer,
                 static_cast<int32_t>(h.record_count));
    if (spliced.empty()) w.raw(region);
    // The stored CRC covers the stored header's tail P and the region R, the Kafka one the Kafka
    // header's tail H and R: CRC(H || R) = CRC(P || R) ^ shift_|R|(CRC(H) ^ CRC(P)).
    const std::string_view stored_tail =
        b.stored.substr(batch_format::kCrcCoveredFrom, h.header_size() - batch_format::kCrcCoveredFrom);
    const uint32_t kafka_tail = crc32c_extend(0, out.data() + start + kAttributes, kHeaderSize - kAttributes);
    const uint32_t crc = h.crc ^ crc32c_shift(kafka_tail ^ crc32c(stored_tail), region.size());
    put_be32(out.data() + start + kCrc, crc);
    return spliced;
  }
  const Times t = times_of(b, type);
  const size_t size = reencoded_size(b, t);
  out.resize(start + size);
  RawWriter w(out.data() + start);
  write_header(w, b.base_offset, size, t.log_append_time ? kLogAppendTime : 0, b.last_offset, t.base, t.max,
               ProducerFields{}, static_cast<int32_t>(b.count));
  for (size_t i = 0; i < b.count; ++i) {
    const EntryView& e = b.entries[i];
    const int64_t delta = static_cast<int64_t>(e.offset.value) - b.base_offset;
    const int64_t ts_delta = timestamp_delta(e, t);
    w.varint(static_cast<int64_t>(record_body_size(e, delta, ts_delta)));
    w.i8(0);
    w.varint(ts_delta);
    w.varint(delta);
    w.nullable(e.key_null, e.key);
    w.nullable(e.payload_null, e.payload);
    w.varint(static_cast<int64_t>(e.headers.size()));
    for (const HeaderView& h : e.headers) {
      w.nullable(false, h.name);
      w.nullable(h.value_null, h.value);
    }
  }
  const uint32_t crc = crc32c_extend(0, out.data() + start + kAttributes, out.size() - start - kAttributes);
  put_be32(out.data() + start + kCrc, crc);
  return {};
}

std::vector<FetchBatch> fetch_batches(const ReadResult& read, int64_t fetch_offset) {
  std::vector<FetchBatch> out;
  const auto& entries = read.entries;
  const int64_t read_end = static_cast<int64_t>(read.next_from.value) - 1;
  if (entries.empty()) {
    if (read_end >= fetch_offset) out.push_back(FetchBatch{nullptr, 0, 0, {}, fetch_offset, read_end});
    return out;
  }
  for (size_t begin = 0; begin < entries.size();) {
    const std::string_view stored = entries[begin].batch;
    size_t end = begin + 1;
    while (end < entries.size() && entries[end].batch.data() == stored.data()) ++end;
    size_t records = 0;
    for (size_t i = begin; i < end; ++i) records += entries[i].whole_batch > 0 ? entries[i].whole_batch : 1;
    FetchBatch b{&entries[begin],
                 end - begin,
                 records,
                 {},
                 static_cast<int64_t>(entries[begin].offset.value),
                 static_cast<int64_t>(entry_end(entries[end - 1]).value) - 1};
    std::optional<BatchHeader> h;
    if (stored.size() >= batch_format::kMinHeaderSize) h = peek_header(stored);
    const bool moved_start = begin == 0 && h && fetch_offset < static_cast<int64_t>(h->base_offset.value);
    if (h && h->version >= batch_format::kVersion2 && !moved_start) {
      b.stored = stored;
      b.base_offset = static_cast<int64_t>(h->base_offset.value);
      b.last_offset = static_cast<int64_t>(h->last_offset().value);
    } else if (begin == 0) {
      b.base_offset = std::min(b.base_offset, fetch_offset);
    }
    if (end == entries.size()) b.last_offset = std::max(b.last_offset, read_end);
    out.push_back(b);
    begin = end;
  }
  return out;
}

bool expand_moved_start(ReadResult& read, int64_t fetch_offset) {
  if (read.entries.empty() || read.entries[0].whole_batch == 0 ||
      static_cast<int64_t>(read.entries[0].offset.value) <= fetch_offset) {
    return true;
  }
  return expand_whole_batch(read, 0);
}

}  // namespace streamd::kafka
