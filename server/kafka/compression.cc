#include "server/kafka/compression.h"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include "server/kafka/codec.h"

namespace streamd::kafka {
namespace {

constexpr size_t kChunk = 64 * 1024;

bool too_large(size_t size, size_t max_out, std::string& reason) {
  if (size <= max_out) return false;
  reason = "inflates past " + std::to_string(max_out) + " bytes";
  return true;
}

bool gunzip(std::string_view in, size_t max_out, std::string& out, std::string& reason) {
  z_stream zs{};
  // 16 + MAX_WBITS: a gzip wrapper, as Kafka's gzip codec writes.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    reason = "zlib could not start";
    return false;
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  const size_t start = out.size();
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    zs.avail_out = kChunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(at + kChunk - zs.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      reason = std::string("gzip: ") + (zs.msg != nullptr ? zs.msg : "damaged or truncated input");
      inflateEnd(&zs);
      return false;
    }
    if (too_large(out.size() - start, max_out, reason)) {
      inflateEnd(&zs);
      return false;
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      reason = "gzip: truncated input";
      inflateEnd(&zs);
      return false;
    }
  }
  inflateEnd(&zs);
  return true;
}

bool unsnappy_block(std::string_view in, size_t max_out, size_t base, std::string& out, std::string& reason) {
  size_t length = 0;
  if (snappy_uncompressed_length(in.data(), in.size(), &length) != SNAPPY_OK) {
    reason = "snappy: damaged block header";
    return false;
  }
  if (too_large(out.size() - base + length, max_out, reason)) return false;
  const size_t at = out.size();
  out.resize(at + length);
  if (snappy_uncompress(in.data(), in.size(), out.data() + at, &length) != SNAPPY_OK) {
    reason = "snappy: damaged block";
    return false;
  }
  out.resize(at + length);
  return true;
}

// The xerial framing: an 8-byte magic, two INT32 versions, then blocks each behind an INT32 length.
constexpr std::string_view kXerialMagic("\x82SNAPPY\x00", 8);

bool unsnappy(std::string_view in, size_t max_out, std::string& out, std::string& reason) {
  const size_t base = out.size();
  if (in.size() < 16 || in.substr(0, 8) != kXerialMagic) return unsnappy_block(in, max_out, base, out, reason);
  Reader r(in.substr(16));
  while (!r.at_end()) {
    const int32_t n = r.i32();
    std::string_view block = r.raw(n < 0 ? r.remaining() + 1 : static_cast<size_t>(n));
    if (r.failed()) {
      reason = "snappy: truncated xerial block";
      return false;
    }
    if (!unsnappy_block(block, max_out, base, out, reason)) return false;
  }
  return true;
}

bool unlz4(std::string_view in, size_t max_out, std::string& out, std::string& reason) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    reason = "lz4 could not start";
    return false;
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> ctx(raw, LZ4F_freeDecompressionContext);
  const size_t start = out.size();
  const char* src = in.data();
  size_t left = in.size();
  size_t hint = 1;
  while (left > 0) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    size_t dst_size = kChunk;
    size_t src_size = left;
    hint = LZ4F_decompress(ctx.get(), out.data() + at, &dst_size, src, &src_size, nullptr);
    out.resize(at + dst_size);
    if (LZ4F_isError(hint)) {
      reason = std::string("lz4: ") + LZ4F_getErrorName(hint);
      return false;
    }
    src += src_size;
    left -= src_size;
    if (too_large(out.size() - start, max_out, reason)) return false;
    if (hint == 0 && left == 0) break;
    if (src_size == 0 && dst_size == 0) break;
  }
  // Drain output still buffered inside the context.
  while (hint != 0) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    size_t dst_size = kChunk;
    size_t src_size = 0;
    hint = LZ4F_decompress(ctx.get(), out.data() + at, &dst_size, src, &src_size, nullptr);
    out.resize(at + dst_size);
    if (LZ4F_isError(hint) || dst_size == 0) {
      reason = "lz4: truncated frame";
      return false;
    }
    if (too_large(out.size() - start, max_out, reason)) return false;
  }
  return true;
}

bool unzstd(std::string_view in, size_t max_out, std::string& out, std::string& reason) {
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!ds || ZSTD_isError(ZSTD_initDStream(ds.get()))) {
    reason = "zstd could not start";
    return false;
  }
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  const size_t start = out.size();
  size_t rc = 1;
  while (input.pos < input.size || rc != 0) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    ZSTD_outBuffer output{out.data() + at, kChunk, 0};
    rc = ZSTD_decompressStream(ds.get(), &output, &input);
    out.resize(at + output.pos);
    if (ZSTD_isError(rc)) {
      reason = std::string("zstd: ") + ZSTD_getErrorName(rc);
      return false;
    }
    if (too_large(out.size() - start, max_out, reason)) return false;
    if (input.pos == input.size && output.pos == 0 && rc != 0) {
      reason = "zstd: truncated frame";
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "unknown";
}

bool decompress(Compression codec, std::string_view in, size_t max_out, std::string& out, std::string& reason) {
  switch (codec) {
    case Compression::kNone:
      if (too_large(in.size(), max_out, reason)) return false;
      out.append(in);
      return true;
    case Compression::kGzip: return gunzip(in, max_out, out, reason);
    case Compression::kSnappy: return unsnappy(in, max_out, out, reason);
    case Compression::kLz4: return unlz4(in, max_out, out, reason);
    case Compression::kZstd: return unzstd(in, max_out, out, reason);
  }
  reason = "unknown compression codec " + std::to_string(static_cast<int>(codec));
  return false;
}

}  // namespace streamd::kafka
