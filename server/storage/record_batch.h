// The record batch: the unit of append, of sync and of recovery. Byte layout: docs/FORMAT.md §"Record batch".
//
// A batch is encoded by BatchBuilder (batch_builder.h) on the caller's thread with placeholders for the
// base offset and the append instant; the partition writer fills those in with seal_batch() once the
// batch's place in the log is known, which also computes the CRC32C. Readers validate with check_batch()
// and walk the records with RecordReader (record_reader.h); a RecordView points into the batch bytes and
// lives no longer than them.
//
// Two versions are read: version 1 (every batch written before version 2 existed, kept readable forever)
// and version 2, which every new batch is, whose record region is Kafka's record encoding byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/storage/types.h"

namespace streamd {

namespace batch_format {
// See docs/FORMAT.md §"Record batch". Offsets of the fixed header fields from the batch's first byte.
inline constexpr size_t kLengthOffset = 0;         // u32: bytes after this field
inline constexpr size_t kCrcOffset = 4;            // u32: CRC32C of every byte after this field
inline constexpr size_t kVersionOffset = 8;        // u8: 1 or 2; 0 is never valid
inline constexpr size_t kAttributesOffset = 9;     // u8: 0 in version 1; kAttribute* bits in version 2
inline constexpr size_t kReservedOffset = 10;      // u16: 0
inline constexpr size_t kBaseOffsetOffset = 12;    // u64
inline constexpr size_t kLastDeltaOffset = 20;     // u32: last offset - base offset
inline constexpr size_t kCountOffset = 24;         // u32: records present
inline constexpr size_t kAppendedAtOffset = 28;    // i64: microseconds since the Unix epoch
// Version 2 only.
inline constexpr size_t kBaseTimestampOffset = 36;  // i64: milliseconds, the records' timestamp base
inline constexpr size_t kMaxTimestampOffset = 44;   // i64: milliseconds, the largest record timestamp
inline constexpr size_t kProducerIdOffset = 52;     // i64: -1 none
inline constexpr size_t kProducerEpochOffset = 60;  // i16: -1 none
inline constexpr size_t kBaseSequenceOffset = 62;   // i32: -1 none

inline constexpr size_t kV1HeaderSize = 36;
inline constexpr size_t kV2HeaderSize = 66;
// The fewest bytes any batch's header takes: what a reader needs before it knows the version.
inline constexpr size_t kMinHeaderSize = kV1HeaderSize;
inline constexpr size_t kCrcCoveredFrom = kVersionOffset;
inline constexpr uint8_t kVersion1 = 1;
inline constexpr uint8_t kVersion2 = 2;
// What BatchBuilder writes.
inline constexpr uint8_t kVersion = kVersion2;

// Version 2's attribute bits; the others are 0.
inline constexpr uint8_t kAttributeTransactional = 0x01;
inline constexpr uint8_t kAttributeControl = 0x02;      // a commit/abort marker
inline constexpr uint8_t kAttributeCreateTimes = 0x04;  // records carry producer timestamps
inline constexpr uint8_t kKnownAttributes = 0x07;

// Upper bound on one batch, so a damaged length cannot make a reader allocate gigabytes.
inline constexpr uint32_t kMaxBatchBytes = 256u << 20;
}  // namespace batch_format

// Kafka's producer fields of a batch (idempotence and transactions); -1 each when the producer has none.
struct ProducerFields {
  int64_t id = -1;
  int16_t epoch = -1;
  int32_t base_sequence = -1;
  bool operator==(const ProducerFields&) const = default;
};

struct HeaderView {
  std::string_view name;
  std::string_view value;
  // Kafka's null header value (version 2 only); `value` is then empty, which is how a protocol without
  // nulls reads it.
  bool value_null = false;
};

struct RecordView {
  Offset offset;
  std::string_view key;
  std::string_view payload;
  std::vector<HeaderView> headers;
  // A null key is a record without a key; a null payload under a key is a tombstone (docs/SEMANTICS.md
  // §1). The views are empty then. A version 1 batch has no nulls of its own: its empty key reads as
  // null, and so does an empty payload under a key (the only meanings version 1 could store).
  bool key_null = false;
  bool payload_null = false;
  // The producer's timestamp, in a batch with create times (version 2 only).
  std::optional<CreateTime> create_time;

  // What compaction and the protocols treat as having a key: a key that is neither null nor empty.
  bool keyed() const { return !key.empty(); }
  // A keyed record whose payload is null: the deletion of its key (docs/SEMANTICS.md §6).
  bool tombstone() const { return keyed() && payload_null; }
};

// An owned record in the native contract's terms, as tests and tools build them: an empty key is no key,
// an empty payload under a key a tombstone.
struct Record {
  std::string key;
  std::string payload;
  std::vector<std::pair<std::string, std::string>> headers;
  bool operator==(const Record&) const = default;
};

// The size docs/SEMANTICS.md §2 bounds with max_record_bytes: key + payload + header names and values.
size_t record_size(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers);
size_t record_size(const Record& r);

struct BatchHeader {
  uint32_t length = 0;  // bytes after the length field
  uint32_t crc = 0;
  uint8_t version = 0;
  uint8_t attributes = 0;
  Offset base_offset;
  uint32_t last_delta = 0;
  uint32_t record_count = 0;
  Timestamp appended_at;
  // Version 2; 0, 0 and no producer in version 1.
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  ProducerFields producer;

  uint64_t total_size() const { return 4ull + length; }
  size_t header_size() const {
    return version >= batch_format::kVersion2 ? batch_format::kV2HeaderSize : batch_format::kV1HeaderSize;
  }
  Offset last_offset() const { return base_offset + last_delta; }
  // The offset after this batch's range: where the next batch starts.
  Offset end_offset() const { return base_offset + last_delta + 1; }
  bool create_times() const { return (attributes & batch_format::kAttributeCreateTimes) != 0; }
  bool transactional() const { return (attributes & batch_format::kAttributeTransactional) != 0; }
  bool control() const { return (attributes & batch_format::kAttributeControl) != 0; }
  // The largest timestamp its records carry as Kafka's CreateTime sees them, in milliseconds:
  // max_timestamp with create times, else appended_at (every record's then).
  int64_t max_record_millis() const { return create_times() ? max_timestamp : appended_at.micros / 1000; }
};

// What check_batch found at a position in a log.
enum class BatchCheck {
  kOk,          // a whole, valid batch
  kZeroFilled,  // a zero length: preallocated space, the log's end
  kTruncated,   // the bytes end inside the batch (a torn write)
  kCorrupt,     // impossible length, unknown version, inconsistent header, or CRC mismatch
};

// Decodes only the fixed header (no CRC check); `bytes` must hold at least kMinHeaderSize bytes. A
// version 2 header's own fields are read only when both its length and `bytes` cover them (check_batch
// refuses a batch whose length does not).
BatchHeader peek_header(std::string_view bytes);

// Validates the batch starting at bytes[0]. On kOk, `header` is filled; on kCorrupt, `reason` says why.
// `bytes` may extend past the batch (the rest of the log); only the batch's own bytes are checked. The
// records themselves are checked by the walk over them (RecordReader, check_records).
BatchCheck check_batch(std::string_view bytes, BatchHeader& header, std::string* reason = nullptr);

// Walks every record of a batch check_batch passed and says whether they follow docs/FORMAT.md
// §Validity; `reason` says what does not. For input that will be stored as it is.
bool check_records(std::string_view batch, std::string* reason = nullptr);

// Writes base offset and instant into an encoded batch and computes its CRC.
void seal_batch(std::string& batch, Offset base, Timestamp appended_at);

}  // namespace streamd
