// The record batch: the unit of append, of sync and of recovery. Byte layout: docs/FORMAT.md.
//
// A batch is encoded by BatchBuilder on the caller's thread with placeholders for the base offset and
// the append instant; the partition writer fills those in with seal_batch() once the batch's place in
// the log is known, which also computes the CRC32C. Readers validate with check_batch() and walk the
// records with RecordReader; a RecordView points into the batch bytes and lives no longer than them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/coding.h"
#include "server/storage/types.h"

namespace streamd {

namespace batch_format {
// See docs/FORMAT.md §"Record batch". Offsets of the fixed header fields from the batch's first byte.
inline constexpr size_t kLengthOffset = 0;         // u32: bytes after this field
inline constexpr size_t kCrcOffset = 4;            // u32: CRC32C of every byte after this field
inline constexpr size_t kVersionOffset = 8;        // u8: kVersion; 0 is never valid
inline constexpr size_t kAttributesOffset = 9;     // u8: 0 in version 1
inline constexpr size_t kReservedOffset = 10;      // u16: 0
inline constexpr size_t kBaseOffsetOffset = 12;    // u64
inline constexpr size_t kLastDeltaOffset = 20;     // u32: last offset - base offset
inline constexpr size_t kCountOffset = 24;         // u32: records present
inline constexpr size_t kAppendedAtOffset = 28;    // i64: microseconds since the Unix epoch
inline constexpr size_t kHeaderSize = 36;
inline constexpr size_t kCrcCoveredFrom = kVersionOffset;
inline constexpr uint8_t kVersion = 1;
// Upper bound on one batch, so a damaged length cannot make a reader allocate gigabytes.
inline constexpr uint32_t kMaxBatchBytes = 256u << 20;
}  // namespace batch_format

struct HeaderView {
  std::string_view name;
  std::string_view value;
};

struct RecordView {
  Offset offset;
  std::string_view key;
  std::string_view payload;
  std::vector<HeaderView> headers;
};

// An owned record, as producers hand them to the builder and tests compare them.
struct Record {
  std::string key;
  std::string payload;
  std::vector<std::pair<std::string, std::string>> headers;
  bool operator==(const Record&) const = default;
};

// The size docs/SEMANTICS.md §2 bounds with max_record_bytes: key + payload + header names and values.
size_t record_size(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers);
size_t record_size(const Record& r);

class BatchBuilder {
 public:
  BatchBuilder();
  // Adds the next record; its offset delta is the number of records added before it.
  void add(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers = {});
  void add(const Record& r);
  // Adds a record at an explicit delta (compaction keeps a survivor's offset). Deltas must increase.
  void add_at(uint32_t offset_delta, std::string_view key, std::string_view payload,
              const std::vector<HeaderView>& headers);
  // Makes the batch cover deltas up to last_delta even when its last records were dropped.
  void set_last_delta(uint32_t last_delta) { last_delta_ = last_delta; }
  uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Bytes of the encoded batch so far.
  size_t size() const { return buf_.size(); }
  // The encoded batch, unsealed (base offset and appended_at zero, CRC not yet valid).
  std::string finish() &&;

 private:
  std::string buf_;
  uint32_t count_ = 0;
  uint32_t last_delta_ = 0;
  bool any_ = false;
};

// Writes base offset and instant into an encoded batch and computes its CRC.
void seal_batch(std::string& batch, Offset base, Timestamp appended_at);

struct BatchHeader {
  uint32_t length = 0;  // bytes after the length field
  uint32_t crc = 0;
  uint8_t version = 0;
  Offset base_offset;
  uint32_t last_delta = 0;
  uint32_t record_count = 0;
  Timestamp appended_at;

  uint64_t total_size() const { return 4ull + length; }
  Offset last_offset() const { return base_offset + last_delta; }
  // The offset after this batch's range: where the next batch starts.
  Offset end_offset() const { return base_offset + last_delta + 1; }
};

// What check_batch found at a position in a log.
enum class BatchCheck {
  kOk,          // a whole, valid batch
  kZeroFilled,  // a zero length: preallocated space, the log's end
  kTruncated,   // the bytes end inside the batch (a torn write)
  kCorrupt,     // impossible length, unknown version, or CRC mismatch
};

// Decodes only the fixed header (no CRC check); `bytes` must hold at least kHeaderSize bytes.
BatchHeader peek_header(std::string_view bytes);

// Validates the batch starting at bytes[0]. On kOk, `header` is filled; on kCorrupt, `reason` says why.
// `bytes` may extend past the batch (the rest of the log); only the batch's own bytes are checked.
BatchCheck check_batch(std::string_view bytes, BatchHeader& header, std::string* reason = nullptr);

// Walks the records of one already-checked batch.
class RecordReader {
 public:
  explicit RecordReader(std::string_view batch);
  const BatchHeader& header() const { return header_; }
  // The next record, or false at the end. A record that does not parse, a delta that does not increase,
  // or bytes left after the last counted record end the walk and set error().
  bool next(RecordView& out) { return next(out.offset, out.key, out.payload, out.headers); }
  // The same into separate fields, so a caller can decode straight into its own structure.
  bool next(Offset& offset, std::string_view& key, std::string_view& payload, std::vector<HeaderView>& headers);
  bool error() const { return error_; }

 private:
  BatchHeader header_;
  std::string_view rest_;
  uint32_t left_;
  // Deltas strictly increase within a batch, so offsets come out in order.
  uint64_t min_delta_ = 0;
  bool error_ = false;
};

// Inline: it runs once per record read, and as a call it was a fifth of a sequential read's time.
inline bool RecordReader::next(Offset& offset, std::string_view& key, std::string_view& payload,
                                std::vector<HeaderView>& headers) {
  if (error_) return false;
  if (left_ == 0) {
    // Bytes past the last counted record mean the count or the records are wrong.
    error_ = !rest_.empty();
    return false;
  }
  const char* p = rest_.data();
  const char* const end = p + rest_.size();
  uint64_t delta = 0, nheaders = 0;
  if (!coding::read_varint(p, end, delta) || delta < min_delta_ || delta > header_.last_delta ||
      !coding::read_length_prefixed(p, end, key) || !coding::read_length_prefixed(p, end, payload) ||
      !coding::read_varint(p, end, nheaders) || nheaders > static_cast<uint64_t>(end - p)) {
    error_ = true;
    return false;
  }
  offset = header_.base_offset + delta;
  min_delta_ = delta + 1;
  headers.clear();
  for (uint64_t i = 0; i < nheaders; ++i) {
    HeaderView h;
    if (!coding::read_length_prefixed(p, end, h.name) || !coding::read_length_prefixed(p, end, h.value)) {
      error_ = true;
      return false;
    }
    headers.push_back(h);
  }
  rest_ = std::string_view(p, static_cast<size_t>(end - p));
  --left_;
  return true;
}

}  // namespace streamd
