// What a read returns: entries that view record bytes owned by the result itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/record_batch.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

// One record as a read returns it: the record (nulls and create time included; record_batch.h), its
// batch's append instant, and the whole stored batch it came from, so that a protocol that answers in
// batches (the Kafka Fetch) can send that batch as it is. Views point into bytes ReadResult::owners keeps.
//
// A read in ReadShape::kBatches may instead give one entry for a whole stored batch: `offset` its base
// offset, no record in the view, and `whole_batch` its record count.
struct EntryView : RecordView {
  Timestamp appended_at;
  std::string_view batch;
  uint32_t whole_batch = 0;
};

// What a read gives: an entry per record (every reader's), or, for a reader that sends stored batches
// as they are (the Kafka Fetch), a version 2 batch taken whole as one entry (EntryView::whole_batch),
// which spares decoding its records. Such a reader gets entries per record still where a batch is
// taken in part.
enum class ReadShape : uint8_t { kRecords, kBatches };

inline EntryView make_entry(const RecordView& record, Timestamp appended_at, std::string_view batch) {
  EntryView e;
  static_cast<RecordView&>(e) = record;
  e.appended_at = appended_at;
  e.batch = batch;
  return e;
}

struct ReadResult {
  std::vector<EntryView> entries;
  // Where the reader continues: past the last entry returned, or past compaction holes scanned.
  Offset next_from;
  // Keeps the bytes the entries view alive: the buffers the segments' records were read into (so a
  // segment removed meanwhile stays readable), or the engine's own. Moving the result keeps the views
  // valid.
  std::vector<std::shared_ptr<const void>> owners;
};

// Where an entry's offsets end: past its record, or past its whole batch.
Offset entry_end(const EntryView& e);

// ReadShape::kBatches, every engine's rule: takes `batch` (header `h`, stamped `appended_at`) into
// `out` as one entry when it is version 2, starts at or after out.next_from and fits the records left,
// charging its record region against the bytes left (the first entry of a read whatever its size) and
// moving out.next_from past it. kRecords: it is to be read record by record; kSpent: the bytes left do
// not hold it, and the read ends here (records_left becomes 0).
enum class WholeBatch : uint8_t { kTaken, kRecords, kSpent };
WholeBatch take_whole_batch(const BatchHeader& h, std::string_view batch, Timestamp appended_at,
                            uint32_t& records_left, uint64_t& bytes_left, ReadResult& out);

// Replaces the whole-batch entry read.entries[i] by an entry per record of its batch below `end`, for
// a reader that must have them after all; false when they do not parse (nothing is changed then).
bool expand_whole_batch(ReadResult& read, size_t i, Offset end = Offset(UINT64_MAX));

// Every engine's rule for where a read may start (docs/SEMANTICS.md): OFFSET_TRIMMED below
// bounds.first, OFFSET_AHEAD past bounds.next; `from == next` is an empty read, not an error.
Status check_read_start(const Bounds& bounds, Offset from);

}  // namespace streamd
