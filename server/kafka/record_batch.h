// Kafka's RecordBatch, message format v2 (magic 2), as Produce brings it and Fetch sends it
// (docs/KAFKA.md §Record batches). Decoding validates what a broker must: the batch length, magic,
// the CRC-32C over attributes..end, the record count against the records present, no control or
// transactional batch, and it inflates gzip/snappy/lz4/zstd record sets. Encoding writes one
// uncompressed LogAppendTime batch of streamd entries.
//
// Both work on plain byte spans with no I/O (the fuzz targets call decode_record_set directly).
// Decoded records view either the input or `arena`, which the caller keeps as long as the records.
// Thread-safe: no shared state.
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
  std::vector<HeaderView> headers;        // a null header value reads as empty
};

struct DecodeResult {
  Error error = Error::kNone;
  std::string reason;  // what was wrong, for the log and the error message
};

// Decodes every batch of one partition's record set into `out` (appending). `max_inflated` bounds
// the bytes all compressed record sets of the call may inflate to. A record set holding anything but
// whole v2 batches is refused: CORRUPT_MESSAGE for damage (length, CRC, count, a record that does not
// parse), UNSUPPORTED_FOR_MESSAGE_FORMAT for magic 0/1, INVALID_RECORD for control or transactional
// batches. Nothing is appended on failure.
DecodeResult decode_record_set(std::string_view records, size_t max_inflated, std::vector<KafkaRecord>& out,
                               std::deque<std::string>& arena);

// Appends one batch holding `entries` (ascending offsets, one appended_at) to `out`. base_offset may
// be below the first entry's offset (a fetch that starts in a compaction hole: the batch still
// contains the offset asked for). Keys and payloads map as docs/KAFKA.md §Mapping says: an empty key
// is null, an empty payload under a key is a null value.
// `last_offset` extends the batch's offset range past its last entry (compaction holes up to where
// the read stopped, so the consumer moves past them); -1 ends it at the last entry. With no entries
// at all the batch is empty but still moves the consumer to last_offset + 1.
void encode_batch(std::string& out, int64_t base_offset, const EntryView* entries, size_t count,
                  int64_t last_offset = -1);

// Bytes encode_batch will append for the same entries.
size_t encoded_batch_size(int64_t base_offset, const EntryView* entries, size_t count);

}  // namespace streamd::kafka
