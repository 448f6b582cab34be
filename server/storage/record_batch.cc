#include "server/storage/record_batch.h"

#include <cstring>
#include <limits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/record_reader.h"

namespace streamd {

using namespace batch_format;

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
  h.attributes = static_cast<uint8_t>(p[kAttributesOffset]);
  h.base_offset = Offset(coding::get_fixed64(p + kBaseOffsetOffset));
  h.last_delta = coding::get_fixed32(p + kLastDeltaOffset);
  h.record_count = coding::get_fixed32(p + kCountOffset);
  h.appended_at = Timestamp(static_cast<int64_t>(coding::get_fixed64(p + kAppendedAtOffset)));
  if (h.version >= kVersion2 && h.total_size() >= kV2HeaderSize && bytes.size() >= kV2HeaderSize) {
    h.base_timestamp = static_cast<int64_t>(coding::get_fixed64(p + kBaseTimestampOffset));
    h.max_timestamp = static_cast<int64_t>(coding::get_fixed64(p + kMaxTimestampOffset));
    h.producer.id = static_cast<int64_t>(coding::get_fixed64(p + kProducerIdOffset));
    uint16_t epoch = 0;
    std::memcpy(&epoch, p + kProducerEpochOffset, 2);
    h.producer.epoch = static_cast<int16_t>(epoch);
    h.producer.base_sequence = static_cast<int32_t>(coding::get_fixed32(p + kBaseSequenceOffset));
  } else if (h.version == kVersion1) {
    // Version 1 has no such fields: its attributes byte means nothing (docs/FORMAT.md).
    h.attributes = 0;
  }
  return h;
}

namespace {

// Version 2's header rules (docs/FORMAT.md §Validity); nullptr when they hold.
const char* check_v2_header(const BatchHeader& h, std::string_view bytes) {
  if (h.length < kV2HeaderSize - 4) return "length shorter than a version 2 header";
  if ((h.attributes & ~kKnownAttributes) != 0) return "unknown attribute bits";
  if (bytes[kReservedOffset] != 0 || bytes[kReservedOffset + 1] != 0) return "reserved bytes not zero";
  if (h.create_times()) {
    if (h.record_count == 0) return "create times in a batch without records";
  } else if (h.base_timestamp != 0 || h.max_timestamp != 0) {
    return "timestamps in a batch without create times";
  }
  const ProducerFields& pf = h.producer;
  if (pf.id < -1) return "a negative producer id other than -1";
  if (pf.id == -1 && (pf.epoch != -1 || pf.base_sequence != -1))
    return "producer fields without a producer id";
  if (pf.id >= 0 && (pf.epoch < 0 || pf.base_sequence < -1))
    return "a producer id with a negative epoch or sequence";
  if (h.transactional() && pf.id < 0) return "a transactional batch without a producer id";
  if (h.control() && !h.transactional()) return "a control batch that is not transactional";
  return nullptr;
}

}  // namespace

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
  if (length < kMinHeaderSize - 4) return fail("length shorter than a batch header");
  if (length > kMaxBatchBytes) return fail("length beyond the largest possible batch");
  if (bytes.size() < 4ull + length) return BatchCheck::kTruncated;
  header = peek_header(bytes);
  uint32_t actual = crc32c_extend(0, bytes.data() + kCrcCoveredFrom, 4ull + length - kCrcCoveredFrom);
  if (actual != header.crc) return fail("CRC32C mismatch");
  if (header.version != kVersion1 && header.version != kVersion2) return fail("unknown batch version");
  if (header.version == kVersion2) {
    if (const char* why = check_v2_header(header, bytes)) return fail(why);
  }
  if (header.record_count > header.last_delta + 1ull) return fail("more records than offsets");
  // end_offset() must exist: a range running past the largest offset would wrap to small offsets.
  if (header.base_offset.value > std::numeric_limits<uint64_t>::max() - header.last_delta - 1)
    return fail("offset range past the largest offset");
  return BatchCheck::kOk;
}

bool check_records(std::string_view batch, std::string* reason) {
  RecordReader records(batch);
  RecordView r;
  while (records.next(r)) {
  }
  if (records.error() && reason != nullptr) *reason = records.reason();
  return !records.error();
}

RecordReader::RecordReader(std::string_view batch)
    : header_(peek_header(batch)),
      rest_(batch.substr(header_.header_size(), header_.total_size() - header_.header_size())),
      left_(header_.record_count) {}

bool RecordReader::at_end() {
  // Bytes past the last counted record mean the count or the records are wrong.
  if (!rest_.empty()) return fail("bytes after the last counted record");
  if (header_.create_times() && any_timestamp_ && seen_max_timestamp_ != header_.max_timestamp) {
    return fail("max_timestamp is not the largest record timestamp");
  }
  return false;
}

}  // namespace streamd
