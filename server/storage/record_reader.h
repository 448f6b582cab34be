// RecordReader: walks the records of one batch that check_batch passed, of either version
// (docs/FORMAT.md §"Record batch", §Validity). Each record comes out as a RecordView into the batch's
// bytes, valid as long as they are. The walk stops at the batch's end or at the first record that breaks
// a rule, and then error() says so: readers report such a batch as damage, never skip it.
// Not thread-safe; cheap to create (no allocation).
#pragma once

#include <string_view>
#include <vector>

#include "server/storage/coding.h"
#include "server/storage/record_batch.h"

namespace streamd {

class RecordReader {
 public:
  explicit RecordReader(std::string_view batch);
  const BatchHeader& header() const { return header_; }
  // The next record into `out` (its headers vector is reused), or false at the end. A record that does
  // not parse, a rule it breaks, or bytes left after the last counted record end the walk and set
  // error().
  bool next(RecordView& out) {
    return header_.version >= batch_format::kVersion2 ? next_v2(out) : next_v1(out);
  }
  bool error() const { return error_; }
  // After an error, what was wrong.
  const char* reason() const { return reason_; }

 private:
  bool next_v1(RecordView& out);
  bool next_v2(RecordView& out);
  bool fail(const char* why) {
    error_ = true;
    reason_ = why;
    return false;
  }
  // At the end of the counted records: true, or an error when bytes are left over or the batch's
  // max_timestamp is not its largest record timestamp.
  bool at_end();

  BatchHeader header_;
  std::string_view rest_;
  uint32_t left_;
  // Deltas strictly increase within a batch, so offsets come out in order.
  uint64_t min_delta_ = 0;
  // The largest record timestamp met so far (batches with create times).
  int64_t seen_max_timestamp_ = 0;
  bool any_timestamp_ = false;
  bool error_ = false;
  const char* reason_ = "";
};

// Inline, both versions: they run once per record read, and as a call the walk was a fifth of a
// sequential read's time.
inline bool RecordReader::next_v1(RecordView& out) {
  if (error_) return false;
  if (left_ == 0) return at_end();
  const char* p = rest_.data();
  const char* const end = p + rest_.size();
  uint64_t delta = 0, nheaders = 0;
  if (!coding::read_varint(p, end, delta) || delta < min_delta_ || delta > header_.last_delta ||
      !coding::read_length_prefixed(p, end, out.key) || !coding::read_length_prefixed(p, end, out.payload) ||
      !coding::read_varint(p, end, nheaders) || nheaders > static_cast<uint64_t>(end - p)) {
    return fail("a record does not parse");
  }
  out.offset = header_.base_offset + delta;
  min_delta_ = delta + 1;
  out.headers.clear();
  for (uint64_t i = 0; i < nheaders; ++i) {
    HeaderView& h = out.headers.emplace_back();
    if (!coding::read_length_prefixed(p, end, h.name) || !coding::read_length_prefixed(p, end, h.value)) {
      return fail("a record's header does not parse");
    }
  }
  // Version 1 stored no nulls: the meanings its empty bytes had (record_batch.h).
  out.key_null = out.key.empty();
  out.payload_null = !out.key_null && out.payload.empty();
  out.create_time.reset();
  rest_ = std::string_view(p, static_cast<size_t>(end - p));
  --left_;
  return true;
}

inline bool RecordReader::next_v2(RecordView& out) {
  if (error_) return false;
  if (left_ == 0) return at_end();
  const char* p = rest_.data();
  const char* const end = p + rest_.size();
  int32_t length = 0;
  if (!coding::read_zigzag32(p, end, length) || length < 0 || length > end - p) {
    return fail("a record's length does not fit the batch");
  }
  const char* const record_end = p + length;
  // attributes: 0, the only value Kafka's record format defines
  if (p == record_end || *p != 0) return fail("a record's attributes are not 0");
  ++p;
  int64_t timestamp_delta = 0;
  int32_t delta = 0;
  if (!coding::read_zigzag64(p, record_end, timestamp_delta) ||
      !coding::read_zigzag32(p, record_end, delta)) {
    return fail("a record does not parse");
  }
  if (delta < 0 || static_cast<uint64_t>(delta) < min_delta_ ||
      static_cast<uint64_t>(delta) > header_.last_delta) {
    return fail("a record's offset delta does not increase within last_delta");
  }
  int32_t key_length = 0;
  if (!coding::read_zigzag32(p, record_end, key_length) || key_length < -1 || key_length > record_end - p) {
    return fail("a record's key length does not fit the record");
  }
  out.key_null = key_length < 0;
  out.key = std::string_view(p, out.key_null ? 0 : static_cast<size_t>(key_length));
  p += out.key.size();
  int32_t value_length = 0;
  if (!coding::read_zigzag32(p, record_end, value_length) || value_length < -1 ||
      value_length > record_end - p) {
    return fail("a record's value length does not fit the record");
  }
  out.payload_null = value_length < 0;
  out.payload = std::string_view(p, out.payload_null ? 0 : static_cast<size_t>(value_length));
  p += out.payload.size();
  int32_t nheaders = 0;
  // Each header takes at least two bytes (two lengths).
  if (!coding::read_zigzag32(p, record_end, nheaders) || nheaders < 0 || nheaders > record_end - p) {
    return fail("a record's header count does not fit the record");
  }
  out.headers.clear();
  for (int32_t i = 0; i < nheaders; ++i) {
    HeaderView& h = out.headers.emplace_back();
    int32_t name_length = 0, header_value_length = 0;
    if (!coding::read_zigzag32(p, record_end, name_length) || name_length < 0 ||
        name_length > record_end - p) {
      return fail("a header's name length does not fit the record");
    }
    h.name = std::string_view(p, static_cast<size_t>(name_length));
    p += name_length;
    if (!coding::read_zigzag32(p, record_end, header_value_length) || header_value_length < -1 ||
        header_value_length > record_end - p) {
      return fail("a header's value length does not fit the record");
    }
    h.value_null = header_value_length < 0;
    h.value = std::string_view(p, h.value_null ? 0 : static_cast<size_t>(header_value_length));
    p += h.value.size();
  }
  if (p != record_end) return fail("a record's length does not match its contents");
  if (header_.create_times()) {
    // Wrapping, as Kafka's clients add them: any base and delta a producer sent read back as sent.
    const auto ts = static_cast<int64_t>(static_cast<uint64_t>(header_.base_timestamp) +
                                         static_cast<uint64_t>(timestamp_delta));
    if (ts > header_.max_timestamp) return fail("a record's timestamp is past the batch's max_timestamp");
    if (!any_timestamp_ || ts > seen_max_timestamp_) seen_max_timestamp_ = ts;
    any_timestamp_ = true;
    out.create_time = CreateTime(ts);
  } else {
    if (timestamp_delta != 0) return fail("a record has a timestamp in a batch without create times");
    out.create_time.reset();
  }
  out.offset = header_.base_offset + static_cast<uint64_t>(delta);
  min_delta_ = static_cast<uint64_t>(delta) + 1;
  rest_ = std::string_view(record_end, static_cast<size_t>(end - record_end));
  --left_;
  return true;
}

}  // namespace streamd
