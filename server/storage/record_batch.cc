#include "server/storage/record_batch.h"

#include <limits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {

using namespace batch_format;
using coding::varint_length;

size_t record_size(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers) {
  size_t n = key.size() + payload.size();
  for (const auto& h : headers) n += h.name.size() + h.value.size();
  return n;
}

size_t record_size(const Record& r) {
  size_t n = r.key.size() + r.payload.size();
  for (const auto& [name, value] : r.headers) n += name.size() + value.size();
  return n;
}

BatchBuilder::BatchBuilder() : buf_(kHeaderSize, '\0') {}

void BatchBuilder::add(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers) {
  add_at(count_, key, payload, headers);
}

void BatchBuilder::add(const Record& r) {
  std::vector<HeaderView> headers;
  headers.reserve(r.headers.size());
  for (const auto& [name, value] : r.headers) headers.push_back({name, value});
  add(r.key, r.payload, headers);
}

void BatchBuilder::add_at(uint32_t offset_delta, std::string_view key, std::string_view payload,
                          const std::vector<HeaderView>& headers) {
  size_t need = varint_length(offset_delta) + varint_length(key.size()) + key.size() +
                varint_length(payload.size()) + payload.size() + varint_length(headers.size());
  for (const auto& h : headers) {
    need += varint_length(h.name.size()) + h.name.size() + varint_length(h.value.size()) + h.value.size();
  }
  buf_.reserve(buf_.size() + need);
  coding::append_varint(buf_, offset_delta);
  coding::append_varint(buf_, key.size());
  buf_.append(key);
  coding::append_varint(buf_, payload.size());
  buf_.append(payload);
  coding::append_varint(buf_, headers.size());
  for (const auto& h : headers) {
    coding::append_varint(buf_, h.name.size());
    buf_.append(h.name);
    coding::append_varint(buf_, h.value.size());
    buf_.append(h.value);
  }
  ++count_;
  if (!any_ || offset_delta > last_delta_) last_delta_ = offset_delta;
  any_ = true;
}

std::string BatchBuilder::finish() && {
  char* p = buf_.data();
  coding::put_fixed32(p + kLengthOffset, static_cast<uint32_t>(buf_.size() - 4));
  p[kVersionOffset] = static_cast<char>(kVersion);
  p[kAttributesOffset] = 0;
  coding::put_fixed32(p + kLastDeltaOffset, last_delta_);
  coding::put_fixed32(p + kCountOffset, count_);
  return std::move(buf_);
}

void seal_batch(std::string& batch, Offset base, Timestamp appended_at) {
  char* p = batch.data();
  coding::put_fixed64(p + kBaseOffsetOffset, base.value);
  coding::put_fixed64(p + kAppendedAtOffset, static_cast<uint64_t>(appended_at.micros));
  coding::put_fixed32(p + kCrcOffset, crc32c_extend(0, p + kCrcCoveredFrom, batch.size() - kCrcCoveredFrom));
}

BatchHeader peek_header(std::string_view bytes) {
  const char* p = bytes.data();
  BatchHeader h;
  h.length = coding::get_fixed32(p + kLengthOffset);
  h.crc = coding::get_fixed32(p + kCrcOffset);
  h.version = static_cast<uint8_t>(p[kVersionOffset]);
  h.base_offset = Offset(coding::get_fixed64(p + kBaseOffsetOffset));
  h.last_delta = coding::get_fixed32(p + kLastDeltaOffset);
  h.record_count = coding::get_fixed32(p + kCountOffset);
  h.appended_at = Timestamp(static_cast<int64_t>(coding::get_fixed64(p + kAppendedAtOffset)));
  return h;
}

BatchCheck check_batch(std::string_view bytes, BatchHeader& header, std::string* reason) {
  auto fail = [&](const char* why) {
    if (reason != nullptr) *reason = why;
    return BatchCheck::kCorrupt;
  };
  if (bytes.size() < 4) {
    // Fewer bytes than a length field: a zero prefix is still preallocated space.
    for (char c : bytes) {
      if (c != 0) return BatchCheck::kTruncated;
    }
    return bytes.empty() ? BatchCheck::kTruncated : BatchCheck::kZeroFilled;
  }
  uint32_t length = coding::get_fixed32(bytes.data());
  if (length == 0) return BatchCheck::kZeroFilled;
  if (length < kHeaderSize - 4) return fail("length shorter than a batch header");
  if (length > kMaxBatchBytes) return fail("length beyond the largest possible batch");
  if (bytes.size() < 4ull + length) return BatchCheck::kTruncated;
  header = peek_header(bytes);
  uint32_t actual = crc32c_extend(0, bytes.data() + kCrcCoveredFrom, 4ull + length - kCrcCoveredFrom);
  if (actual != header.crc) return fail("CRC32C mismatch");
  if (header.version != kVersion) return fail("unknown batch version");
  if (header.record_count > header.last_delta + 1ull) return fail("more records than offsets");
  // end_offset() must exist: a range running past the largest offset would wrap to small offsets.
  if (header.base_offset.value > std::numeric_limits<uint64_t>::max() - header.last_delta - 1)
    return fail("offset range past the largest offset");
  return BatchCheck::kOk;
}

RecordReader::RecordReader(std::string_view batch)
    : header_(peek_header(batch)),
      rest_(batch.substr(kHeaderSize, header_.total_size() - kHeaderSize)),
      left_(header_.record_count) {}

}  // namespace streamd
