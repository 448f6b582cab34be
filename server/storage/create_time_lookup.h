// CreateTimeLookup: Kafka's ListOffsets by create time over a partition kept as a row of segments (the
// file and memory engines; docs/FORMAT.md §"Create-time lookups"). The answer is the first retained
// record whose create time — or, for a record without one, its batch's appended_at in milliseconds — is
// at or after t.
//
// Create times follow no order along a partition, so no index can binary-search them the way the time
// index searches appended_at. The lookup walks batches in offset order and decodes the records of a
// batch only when its max_timestamp says one may qualify. Closed segments never change but by
// compaction, which only drops records: the largest timestamp of each closed segment walked whole is
// remembered (keyed by base and size), and a later lookup for a later time skips the segment without
// reading it. The active segment is read on every lookup.
//
// Thread-safe: any number of lookups at once, concurrently with appends, retention and compaction.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "server/storage/segmented_log.h"
#include "server/storage/status.h"
#include "server/storage/types.h"

namespace streamd {

class CreateTimeLookup {
 public:
  Result<std::optional<TimedOffset>> find(const SegmentedLog& log, CreateTime t);

 private:
  struct Walked {
    uint64_t bytes = 0;
    int64_t max_millis = 0;  // the largest timestamp of the segment's records
    bool any = false;        // whether it holds a record at all
  };
  std::optional<Walked> walked(Offset base, uint64_t bytes);
  void remember(Offset base, Walked w, const std::vector<SegmentInfo>& live);

  std::mutex mu_;
  std::map<uint64_t, Walked> closed_;  // by segment base
};

}  // namespace streamd
