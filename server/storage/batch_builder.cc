#include "server/storage/batch_builder.h"

#include <cstring>

#include "server/storage/coding.h"

namespace streamd {

using namespace batch_format;

namespace {

// Writes a varint at p and returns the byte after it: the record encoder writes into space it sized
// beforehand, one resize per record, instead of appending field by field.
char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
char* put_zigzag(char* p, int64_t v) {
  return put_varint(p, coding::zigzag(v));
}
char* put_bytes(char* p, std::string_view b) {
  if (!b.empty()) std::memcpy(p, b.data(), b.size());
  return p + b.size();
}

// The bytes of a nullable field: its length (-1 for null) and its contents.
size_t nullable_size(bool null, std::string_view b) {
  return null ? 1 : coding::zigzag_length(static_cast<int64_t>(b.size())) + b.size();
}
char* put_nullable(char* p, bool null, std::string_view b) {
  if (null) return put_zigzag(p, -1);
  return put_bytes(put_zigzag(p, static_cast<int64_t>(b.size())), b);
}

void write_header(std::string& buf, const BatchOptions& options, uint32_t count, uint32_t last_delta,
                  int64_t base_timestamp, int64_t max_timestamp) {
  char* p = buf.data();
  coding::put_fixed32(p + kLengthOffset, static_cast<uint32_t>(buf.size() - 4));
  p[kVersionOffset] = static_cast<char>(kVersion2);
  uint8_t attributes = 0;
  if (options.transactional) attributes |= kAttributeTransactional;
  if (options.control) attributes |= kAttributeControl;
  // Create times need a record to carry them (a batch compaction emptied has none).
  const bool create_times = options.create_times && count > 0;
  if (create_times) attributes |= kAttributeCreateTimes;
  p[kAttributesOffset] = static_cast<char>(attributes);
  coding::put_fixed32(p + kLastDeltaOffset, last_delta);
  coding::put_fixed32(p + kCountOffset, count);
  coding::put_fixed64(p + kBaseTimestampOffset, create_times ? static_cast<uint64_t>(base_timestamp) : 0);
  coding::put_fixed64(p + kMaxTimestampOffset, create_times ? static_cast<uint64_t>(max_timestamp) : 0);
  const ProducerFields producer = options.producer.id >= 0 ? options.producer : ProducerFields{};
  coding::put_fixed64(p + kProducerIdOffset, static_cast<uint64_t>(producer.id));
  const auto epoch = static_cast<uint16_t>(producer.epoch);
  std::memcpy(p + kProducerEpochOffset, &epoch, 2);
  coding::put_fixed32(p + kBaseSequenceOffset, static_cast<uint32_t>(producer.base_sequence));
}

}  // namespace

BatchBuilder::BatchBuilder(BatchOptions options) : options_(options), buf_(kV2HeaderSize, '\0') {}

void BatchBuilder::add(std::string_view key, std::string_view payload,
                       const std::vector<HeaderView>& headers) {
  append_record(count_, 0, key.empty(), key, !key.empty() && payload.empty(), payload, headers);
}

void BatchBuilder::add(const Record& r) {
  std::vector<HeaderView> headers;
  headers.reserve(r.headers.size());
  for (const auto& [name, value] : r.headers) headers.push_back({name, value});
  add(r.key, r.payload, headers);
}

void BatchBuilder::add(const RecordView& r) {
  add_at(count_, r);
}

void BatchBuilder::add_at(uint32_t offset_delta, const RecordView& r) {
  int64_t timestamp_delta = 0;
  if (options_.create_times) {
    const int64_t millis = r.create_time ? r.create_time->millis : (count_ == 0 ? 0 : base_timestamp_);
    note_timestamp(millis);
    // Wrapping, as the reader adds it back (record_reader.h).
    timestamp_delta =
        static_cast<int64_t>(static_cast<uint64_t>(millis) - static_cast<uint64_t>(base_timestamp_));
  }
  append_record(offset_delta, timestamp_delta, r.key_null, r.key, r.payload_null, r.payload, r.headers);
}

void BatchBuilder::note_timestamp(int64_t millis) {
  if (count_ == 0) {
    base_timestamp_ = millis;
    max_timestamp_ = millis;
  } else if (millis > max_timestamp_) {
    max_timestamp_ = millis;
  }
}

void BatchBuilder::append_record(uint32_t offset_delta, int64_t timestamp_delta, bool key_null,
                                 std::string_view key, bool payload_null, std::string_view payload,
                                 const std::vector<HeaderView>& headers) {
  // attributes, timestamp delta, offset delta, key, value, header count, headers
  size_t body = 1 + coding::zigzag_length(timestamp_delta) + coding::zigzag_length(offset_delta) +
                nullable_size(key_null, key) + nullable_size(payload_null, payload) +
                coding::zigzag_length(static_cast<int64_t>(headers.size()));
  for (const HeaderView& h : headers) {
    body += coding::zigzag_length(static_cast<int64_t>(h.name.size())) + h.name.size() +
            nullable_size(h.value_null, h.value);
  }
  const size_t at = buf_.size();
  buf_.resize(at + coding::zigzag_length(static_cast<int64_t>(body)) + body);
  char* p = buf_.data() + at;
  p = put_zigzag(p, static_cast<int64_t>(body));
  *p++ = 0;  // record attributes
  p = put_zigzag(p, timestamp_delta);
  p = put_zigzag(p, offset_delta);
  p = put_nullable(p, key_null, key);
  p = put_nullable(p, payload_null, payload);
  p = put_zigzag(p, static_cast<int64_t>(headers.size()));
  for (const HeaderView& h : headers) {
    p = put_bytes(put_zigzag(p, static_cast<int64_t>(h.name.size())), h.name);
    p = put_nullable(p, h.value_null, h.value);
  }
  ++count_;
  if (!any_ || offset_delta > last_delta_) last_delta_ = offset_delta;
  any_ = true;
}

std::string BatchBuilder::finish() && {
  write_header(buf_, options_, count_, last_delta_, base_timestamp_, max_timestamp_);
  return std::move(buf_);
}

std::string BatchBuilder::wrap(const BatchOptions& options, const EncodedRecords& records) {
  std::string buf;
  buf.reserve(kV2HeaderSize + records.region.size());
  buf.resize(kV2HeaderSize);
  buf.append(records.region);
  write_header(buf, options, records.count, records.last_delta, records.base_timestamp,
               records.max_timestamp);
  return buf;
}

}  // namespace streamd
