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
struct EntryView : RecordView {
  Timestamp appended_at;
  std::string_view batch;
};

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

// Every engine's rule for where a read may start (docs/SEMANTICS.md): OFFSET_TRIMMED below
// bounds.first, OFFSET_AHEAD past bounds.next; `from == next` is an empty read, not an error.
Status check_read_start(const Bounds& bounds, Offset from);

}  // namespace streamd
