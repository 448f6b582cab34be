#include "server/kafka/record_batch.h"

#include <cstring>

#include "server/kafka/codec.h"
#include "server/kafka/compression.h"
#include "server/storage/crc32c.h"

namespace streamd::kafka {
namespace {

using namespace batch_v2;

DecodeResult refuse(Error e, std::string reason) {
  return DecodeResult{e, std::move(reason)};
}

// One record of a batch's (inflated) record section.
bool decode_record(Reader& r, KafkaRecord& rec) {
  const int32_t length = r.varint();
  if (r.failed() || length < 0 || static_cast<size_t>(length) > r.remaining()) return false;
  Reader body(r.raw(static_cast<size_t>(length)));
  body.i8();       // attributes: unused in v2
  body.varlong();  // timestamp delta: topics are LogAppendTime
  body.varint();   // offset delta: the broker assigns offsets
  const int32_t key_length = body.varint();
  if (key_length >= 0) {
    rec.key = body.raw(static_cast<size_t>(key_length));
  } else if (key_length != -1) {
    return false;
  }
  const int32_t value_length = body.varint();
  if (value_length >= 0) {
    rec.value = body.raw(static_cast<size_t>(value_length));
  } else if (value_length != -1) {
    return false;
  }
  const int32_t headers = body.varint();
  if (headers < 0 || static_cast<size_t>(headers) > body.remaining()) return false;
  rec.headers.reserve(static_cast<size_t>(headers));
  for (int32_t i = 0; i < headers && !body.failed(); ++i) {
    HeaderView h;
    const int32_t name_length = body.varint();
    if (name_length < 0) return false;
    h.name = body.raw(static_cast<size_t>(name_length));
    const int32_t header_value_length = body.varint();
    if (header_value_length >= 0) {
      h.value = body.raw(static_cast<size_t>(header_value_length));
    } else if (header_value_length != -1) {
      return false;
    }
    rec.headers.push_back(h);
  }
  return !body.failed() && body.at_end();
}

size_t varint_size(uint64_t zigzagged) {
  size_t n = 1;
  while (zigzagged >= 0x80) {
    zigzagged >>= 7;
    ++n;
  }
  return n;
}
size_t zz32_size(int32_t v) {
  return varint_size(static_cast<uint32_t>((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31)));
}

std::optional<std::string_view> key_of(const EntryView& e) {
  if (e.key.empty()) return std::nullopt;
  return e.key;
}
std::optional<std::string_view> value_of(const EntryView& e) {
  if (e.payload.empty() && !e.key.empty()) return std::nullopt;  // a tombstone
  return e.payload;
}

size_t nullable_size(std::optional<std::string_view> b) {
  return b ? zz32_size(static_cast<int32_t>(b->size())) + b->size() : 1;
}

// The bytes of a record after its length varint.
size_t record_body_size(const EntryView& e, int32_t offset_delta) {
  size_t n = 1 + 1 + zz32_size(offset_delta);  // attributes, timestamp delta 0, offset delta
  n += nullable_size(key_of(e)) + nullable_size(value_of(e));
  n += zz32_size(static_cast<int32_t>(e.headers.size()));
  for (const HeaderView& h : e.headers) {
    n += zz32_size(static_cast<int32_t>(h.name.size())) + h.name.size();
    n += zz32_size(static_cast<int32_t>(h.value.size())) + h.value.size();
  }
  return n;
}

}  // namespace

DecodeResult decode_record_set(std::string_view records, size_t max_inflated, std::vector<KafkaRecord>& out,
                               std::deque<std::string>& arena) {
  const size_t out_start = out.size();
  const size_t arena_start = arena.size();
  size_t inflated = 0;
  auto fail = [&](Error e, std::string reason) {
    out.resize(out_start);
    arena.resize(arena_start);
    return refuse(e, std::move(reason));
  };
  if (records.empty()) return fail(Error::kCorruptMessage, "the record set is empty");
  Reader set(records);
  while (!set.at_end()) {
    if (set.remaining() < kLogOverhead + 5) return fail(Error::kCorruptMessage, "a batch is truncated");
    const char* start = records.data() + (records.size() - set.remaining());
    set.i64();  // base offset: assigned by the broker
    const int32_t length = set.i32();
    if (length < 0 || static_cast<size_t>(length) > set.remaining()) {
      return fail(Error::kCorruptMessage, "a batch's length runs past the record set");
    }
    std::string_view batch(start, kLogOverhead + static_cast<size_t>(length));
    set.raw(static_cast<size_t>(length));
    if (batch.size() <= kMagic) return fail(Error::kCorruptMessage, "a batch is shorter than its header");
    const auto magic = static_cast<int8_t>(batch[kMagic]);
    if (magic != 2) {
      return fail(Error::kUnsupportedForMessageFormat,
                  "message format v" + std::to_string(magic) + " is not supported; only v2 batches are");
    }
    if (batch.size() < kHeaderSize) return fail(Error::kCorruptMessage, "a batch is shorter than its header");
    const uint32_t crc = get_be32(batch.data() + kCrc);
    if (crc32c(batch.substr(kAttributes)) != crc) return fail(Error::kCorruptMessage, "a batch's CRC does not match");
    Reader header(batch.substr(kAttributes));
    const int16_t attributes = header.i16();
    if ((attributes & kControl) != 0) return fail(Error::kInvalidRecord, "control batches are not accepted");
    if ((attributes & kTransactional) != 0) {
      return fail(Error::kInvalidRecord, "transactional batches are not supported");
    }
    Reader counted(batch.substr(kRecordCount));
    const int32_t count = counted.i32();
    if (count < 0) return fail(Error::kCorruptMessage, "a batch's record count is negative");
    std::string_view body = batch.substr(kHeaderSize);
    const auto codec = static_cast<Compression>(attributes & kCompressionMask);
    if (codec != Compression::kNone) {
      std::string& inflated_bytes = arena.emplace_back();
      std::string reason;
      if (!decompress(codec, body, max_inflated - inflated, inflated_bytes, reason)) {
        return fail(Error::kCorruptMessage, std::string(compression_name(codec)) + " record set: " + reason);
      }
      inflated += inflated_bytes.size();
      body = inflated_bytes;
    }
    Reader r(body);
    for (int32_t i = 0; i < count; ++i) {
      if (r.at_end()) return fail(Error::kCorruptMessage, "a batch holds fewer records than its count");
      KafkaRecord& rec = out.emplace_back();
      if (!decode_record(r, rec)) return fail(Error::kCorruptMessage, "a record does not parse");
    }
    if (!r.at_end()) return fail(Error::kCorruptMessage, "a batch holds more records than its count");
  }
  return DecodeResult{};
}

size_t encoded_batch_size(int64_t base_offset, const EntryView* entries, size_t count) {
  size_t n = kHeaderSize;
  for (size_t i = 0; i < count; ++i) {
    const auto delta = static_cast<int32_t>(static_cast<int64_t>(entries[i].offset.value) - base_offset);
    const size_t body = record_body_size(entries[i], delta);
    n += zz32_size(static_cast<int32_t>(body)) + body;
  }
  return n;
}

namespace {

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
  void uvarint(uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void varint(int32_t v) { uvarint(static_cast<uint32_t>((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31))); }
  void bytes(std::optional<std::string_view> b) {
    if (!b) {
      varint(-1);
      return;
    }
    varint(static_cast<int32_t>(b->size()));
    std::memcpy(p_, b->data(), b->size());
    p_ += b->size();
  }
  char* position() const { return p_; }

 private:
  char* p_;
};

}  // namespace

void encode_batch(std::string& out, int64_t base_offset, const EntryView* entries, size_t count,
                  int64_t last_offset) {
  const size_t start = out.size();
  const int64_t time_ms = count > 0 ? entries[0].appended_at.micros / 1000 : -1;
  if (last_offset < 0) last_offset = count > 0 ? static_cast<int64_t>(entries[count - 1].offset.value) : base_offset;
  const size_t size = encoded_batch_size(base_offset, entries, count);
  out.resize(start + size);
  RawWriter w(out.data() + start);
  w.i64(base_offset);
  w.i32(static_cast<int32_t>(size - kLogOverhead));
  w.i32(0);  // partition leader epoch
  w.i8(2);   // magic
  w.i32(0);  // crc, below
  w.i16(kLogAppendTime);
  w.i32(static_cast<int32_t>(last_offset - base_offset));
  w.i64(time_ms);  // base timestamp
  w.i64(time_ms);  // max timestamp: with LogAppendTime, every record's timestamp
  w.i64(-1);       // producer id
  w.i16(-1);       // producer epoch
  w.i32(-1);       // base sequence
  w.i32(static_cast<int32_t>(count));
  for (size_t i = 0; i < count; ++i) {
    const EntryView& e = entries[i];
    const auto delta = static_cast<int32_t>(static_cast<int64_t>(e.offset.value) - base_offset);
    w.varint(static_cast<int32_t>(record_body_size(e, delta)));
    w.i8(0);
    w.i8(0);  // timestamp delta 0, a one-byte varlong
    w.varint(delta);
    w.bytes(key_of(e));
    w.bytes(value_of(e));
    w.varint(static_cast<int32_t>(e.headers.size()));
    for (const HeaderView& h : e.headers) {
      w.bytes(h.name);
      w.bytes(h.value);
    }
  }
  const uint32_t crc = crc32c_extend(0, out.data() + start + kAttributes, size - kAttributes);
  put_be32(out.data() + start + kCrc, crc);
}

}  // namespace streamd::kafka
