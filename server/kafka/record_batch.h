// Kafka's RecordBatch, message format v2 (magic 2), as Produce brings it (docs/KAFKA.md §Record batches).
// Decoding validates what a broker must: the batch length, magic, the CRC-32C over attributes..end, the
// record count against the records present, the producer fields, no control or transactional batch, and
// it inflates gzip/snappy/lz4/zstd record sets. storage_batch() then makes the one stored batch
// (docs/FORMAT.md §"Record batch", version 2) the records become: a producer's single uncompressed or
// inflated batch keeps its record region byte for byte, since the stored records are Kafka's encoding.
// The way back, stored batches into Fetch answers, is fetch_batch.h's.
//
// Plain byte spans with no I/O (the fuzz targets call decode_record_set directly). Decoded records view
// either the input or `arena`, which the caller keeps as long as the records. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/kafka/errors.h"
#include "server/storage/read_result.h"
#include "server/storage/record_batch.h"

namespace streamd::kafka {

namespace batch_v2 {
// Byte positions of the fixed fields from the batch's first byte.
inline constexpr size_t kBaseOffset = 0;          // int64
inline constexpr size_t kLength = 8;              // int32: bytes after this field
inline constexpr size_t kLeaderEpoch = 12;        // int32
inline constexpr size_t kMagic = 16;              // int8: 2
inline constexpr size_t kCrc = 17;                // uint32: CRC-32C of everything from kAttributes on
inline constexpr size_t kAttributes = 21;         // int16
inline constexpr size_t kLastOffsetDelta = 23;    // int32
inline constexpr size_t kBaseTimestamp = 27;      // int64
inline constexpr size_t kMaxTimestamp = 35;       // int64
inline constexpr size_t kProducerId = 43;         // int64
inline constexpr size_t kProducerEpoch = 51;      // int16
inline constexpr size_t kBaseSequence = 53;       // int32
inline constexpr size_t kRecordCount = 57;        // int32
inline constexpr size_t kHeaderSize = 61;
inline constexpr size_t kLogOverhead = 12;        // base offset + length
inline constexpr int16_t kCompressionMask = 0x07;
inline constexpr int16_t kLogAppendTime = 0x08;
inline constexpr int16_t kTransactional = 0x10;
inline constexpr int16_t kControl = 0x20;
}  // namespace batch_v2

struct KafkaRecord {
  std::optional<std::string_view> key;    // nullopt: null
  std::optional<std::string_view> value;  // nullopt: null (a tombstone under a key)
  std::vector<HeaderView> headers;        // value_null for a null header value
  int64_t timestamp = 0;                  // the producer's: base timestamp + delta, milliseconds
};

// What one producer batch said beyond its records.
struct KafkaBatch {
  ProducerFields producer;  // normalized: all -1 without a producer id
  int64_t base_timestamp = 0;
  int64_t max_timestamp =
      0;  // the largest record timestamp, computed (what the producer wrote is not trusted)
  std::string_view records;  // the record region, inflated
  size_t first = 0;          // its records' place in the decoded records
  size_t count = 0;
  // Every record's attributes are 0 and its offset delta its index: the region is a stored batch's
  // record region as it is (docs/FORMAT.md §Validity).
  bool storable = true;
  bool transactional = false;  // a transactional producer's (the request named its transactional id)
};

struct DecodeResult {
  Error error = Error::kNone;
  std::string reason;  // what was wrong, for the log and the error message
};

// Decodes every batch of one partition's record set into `out` (appending), and with `batches` what each
// batch said. `max_inflated` bounds the bytes all compressed record sets of the call may inflate to. A
// record set holding anything but whole v2 batches is refused: CORRUPT_MESSAGE for damage (length, CRC,
// count, a record that does not parse, producer fields that do not go together),
// UNSUPPORTED_FOR_MESSAGE_FORMAT for magic 0/1, INVALID_RECORD for control batches and for transactional
// batches unless `transactional` (the request named a transactional id), which then requires every batch to
// be one. Nothing is appended on failure.
DecodeResult decode_record_set(std::string_view records, size_t max_inflated, std::vector<KafkaRecord>& out,
                               std::deque<std::string>& arena, std::vector<KafkaBatch>* batches = nullptr,
                               bool transactional = false);

// The stored batch (unsealed) of a decoded record set: the producer's record region as it is when the set
// was one storable batch, else the records encoded anew, with their nulls and create times. The batch
// carries create times and the first batch's producer fields and transactional attribute.
std::string storage_batch(const std::vector<KafkaRecord>& records, const std::vector<KafkaBatch>& batches);

}  // namespace streamd::kafka
