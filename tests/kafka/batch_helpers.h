// Test helpers that build Kafka v2 batches as producers send them: from records, optionally
// compressed with the same libraries the broker reads them with.
#pragma once

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/kafka/codec.h"
#include "server/kafka/compression.h"
#include "server/kafka/record_batch.h"
#include "server/storage/crc32c.h"

namespace streamd::kafka::testing {

struct TestRecord {
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

inline std::string compress(Compression codec, const std::string& in) {
  std::string out;
  switch (codec) {
    case Compression::kNone:
      return in;
    case Compression::kGzip: {
      z_stream zs{};
      REQUIRE(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
      out.resize(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      zs.avail_in = static_cast<uInt>(in.size());
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(out.size());
      REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
      out.resize(zs.total_out);
      deflateEnd(&zs);
      return out;
    }
    case Compression::kSnappy: {
      size_t n = snappy_max_compressed_length(in.size());
      out.resize(n);
      REQUIRE(snappy_compress(in.data(), in.size(), out.data(), &n) == SNAPPY_OK);
      out.resize(n);
      return out;
    }
    case Compression::kLz4: {
      out.resize(LZ4F_compressFrameBound(in.size(), nullptr));
      const size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
      REQUIRE_FALSE(LZ4F_isError(n));
      out.resize(n);
      return out;
    }
    case Compression::kZstd: {
      out.resize(ZSTD_compressBound(in.size()));
      const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
      REQUIRE_FALSE(ZSTD_isError(n));
      out.resize(n);
      return out;
    }
  }
  return out;
}

// Recomputes the length and CRC of a batch whose bytes were changed on purpose.
inline void reseal(std::string& batch) {
  put_be32(batch.data() + batch_v2::kLength, static_cast<uint32_t>(batch.size() - batch_v2::kLogOverhead));
  put_be32(batch.data() + batch_v2::kCrc,
           crc32c_extend(0, batch.data() + batch_v2::kAttributes, batch.size() - batch_v2::kAttributes));
}

// One producer batch (CreateTime, base offset 0, as a client writes it).
inline std::string producer_batch(const std::vector<TestRecord>& records, Compression codec = Compression::kNone,
                                  int16_t extra_attributes = 0) {
  std::string body;
  Writer w(body);
  for (size_t i = 0; i < records.size(); ++i) {
    std::string rec;
    Writer r(rec);
    r.i8(0);
    r.varlong(static_cast<int64_t>(i));
    r.varint(static_cast<int32_t>(i));
    if (records[i].key.empty()) {
      r.varint(-1);
    } else {
      r.varint(static_cast<int32_t>(records[i].key.size()));
      r.raw(records[i].key);
    }
    r.varint(static_cast<int32_t>(records[i].value.size()));
    r.raw(records[i].value);
    r.varint(static_cast<int32_t>(records[i].headers.size()));
    for (const auto& [name, value] : records[i].headers) {
      r.varint(static_cast<int32_t>(name.size()));
      r.raw(name);
      r.varint(static_cast<int32_t>(value.size()));
      r.raw(value);
    }
    w.varint(static_cast<int32_t>(rec.size()));
    w.raw(rec);
  }
  std::string batch;
  Writer b(batch);
  b.i64(0);
  b.i32(0);   // length, sealed below
  b.i32(-1);  // leader epoch
  b.i8(2);
  b.u32(0);   // crc
  b.i16(static_cast<int16_t>(static_cast<int16_t>(codec) | extra_attributes));
  b.i32(static_cast<int32_t>(records.size()) - 1);
  b.i64(1000);
  b.i64(1000 + static_cast<int64_t>(records.size()));
  b.i64(-1);
  b.i16(-1);
  b.i32(-1);
  b.i32(static_cast<int32_t>(records.size()));
  b.raw(compress(codec, body));
  reseal(batch);
  return batch;
}

// A record as a producer may send it, nulls and all: nullopt is null.
struct ExactRecord {
  using Headers = std::vector<std::pair<std::string, std::optional<std::string>>>;
  ExactRecord(std::optional<std::string> k, std::optional<std::string> v, Headers h = {},
              int64_t ts_delta = 0)
      : key(std::move(k)), value(std::move(v)), headers(std::move(h)), timestamp_delta(ts_delta) {}

  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = -1;  // -1: its index
  int8_t attributes = 0;
};

inline std::string exact_record_region(const std::vector<ExactRecord>& records) {
  std::string body;
  Writer w(body);
  for (size_t i = 0; i < records.size(); ++i) {
    const ExactRecord& x = records[i];
    std::string rec;
    Writer r(rec);
    r.i8(x.attributes);
    r.varlong(x.timestamp_delta);
    r.varint(x.offset_delta >= 0 ? x.offset_delta : static_cast<int32_t>(i));
    auto nullable = [&r](const std::optional<std::string>& b) {
      if (!b) {
        r.varint(-1);
        return;
      }
      r.varint(static_cast<int32_t>(b->size()));
      r.raw(*b);
    };
    nullable(x.key);
    nullable(x.value);
    r.varint(static_cast<int32_t>(x.headers.size()));
    for (const auto& [name, value] : x.headers) {
      r.varint(static_cast<int32_t>(name.size()));
      r.raw(name);
      nullable(value);
    }
    w.varint(static_cast<int32_t>(rec.size()));
    w.raw(rec);
  }
  return body;
}

// One producer batch of exact records, with the base timestamp and producer fields given.
inline std::string exact_producer_batch(const std::vector<ExactRecord>& records, int64_t base_timestamp,
                                        Compression codec = Compression::kNone, int64_t producer_id = -1,
                                        int16_t producer_epoch = -1, int32_t base_sequence = -1) {
  std::string batch;
  Writer b(batch);
  b.i64(0);
  b.i32(0);   // length, sealed below
  b.i32(-1);  // leader epoch
  b.i8(2);
  b.u32(0);  // crc
  b.i16(static_cast<int16_t>(codec));
  b.i32(static_cast<int32_t>(records.size()) - 1);
  b.i64(base_timestamp);
  b.i64(base_timestamp);  // max timestamp: what some producers get wrong; the broker computes its own
  b.i64(producer_id);
  b.i16(producer_epoch);
  b.i32(base_sequence);
  b.i32(static_cast<int32_t>(records.size()));
  b.raw(compress(codec, exact_record_region(records)));
  reseal(batch);
  return batch;
}

}  // namespace streamd::kafka::testing
