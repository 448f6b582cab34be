// BatchBuilder: encodes one record batch, version 2 (docs/FORMAT.md §"Record batch"), on the caller's
// thread. The result is unsealed: base offset and append instant are zero and the CRC is not yet valid
// until the partition writer's seal_batch() (record_batch.h) gives the batch its place.
//
// Records are written in Kafka's record encoding, so that a Kafka Fetch can send the region as it is.
// A record without a create time in a batch with create times takes the batch's base timestamp.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/record_batch.h"

namespace streamd {

// The batch-wide fields of a version 2 batch.
struct BatchOptions {
  bool create_times = false;  // records carry producer timestamps (kAttributeCreateTimes)
  bool transactional = false;
  bool control = false;
  ProducerFields producer;
};

// A record region already in version 2's record encoding (a Kafka producer's, validated against
// docs/FORMAT.md §Validity by the caller), with what the header says of it.
struct EncodedRecords {
  std::string_view region;
  uint32_t count = 0;
  uint32_t last_delta = 0;
  int64_t base_timestamp = 0;  // with create times
  int64_t max_timestamp = 0;
};

class BatchBuilder {
 public:
  explicit BatchBuilder(BatchOptions options = {});

  // A record in the native contract's terms (docs/SEMANTICS.md §1): an empty key is no key and an empty
  // payload under a key is a tombstone, both stored as nulls. Its offset delta is the number of records
  // added before it; it has no create time.
  void add(std::string_view key, std::string_view payload, const std::vector<HeaderView>& headers = {});
  void add(const Record& r);
  // A record exactly as given (nulls, header nulls, create time) at the next delta.
  void add(const RecordView& r);
  // The same at an explicit delta (compaction keeps a survivor's offset). Deltas must increase.
  void add_at(uint32_t offset_delta, const RecordView& r);
  // Makes the batch cover deltas up to last_delta even when its last records were dropped.
  void set_last_delta(uint32_t last_delta) { last_delta_ = last_delta; }
  uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Bytes of the encoded batch so far.
  size_t size() const { return buf_.size(); }
  // The encoded batch, unsealed (base offset and appended_at zero, CRC not yet valid). A batch left
  // without records carries no create times.
  std::string finish() &&;

  // An unsealed batch around records already encoded.
  static std::string wrap(const BatchOptions& options, const EncodedRecords& records);

 private:
  void append_record(uint32_t offset_delta, int64_t timestamp_delta, bool key_null, std::string_view key,
                     bool payload_null, std::string_view payload, const std::vector<HeaderView>& headers);
  void note_timestamp(int64_t millis);

  BatchOptions options_;
  std::string buf_;
  uint32_t count_ = 0;
  uint32_t last_delta_ = 0;
  bool any_ = false;
  int64_t base_timestamp_ = 0;
  int64_t max_timestamp_ = 0;
};

}  // namespace streamd
