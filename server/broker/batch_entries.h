// take_batch_entries: a read's step over one stored batch, for the engines that keep whole batches
// (memory, postgres): the batch's entries at or after out.next_from, within what the read may still
// return. One entry always comes back, whatever max_bytes says (docs/SEMANTICS.md §2).
#pragma once

#include <cstdint>
#include <string_view>

#include "server/storage/read_result.h"

namespace streamd {

// What a read may still return; both reach 0 when it is done.
struct ReadBudget {
  uint32_t records_left = 0;
  uint64_t bytes_left = 0;
  bool spent() const { return records_left == 0 || bytes_left == 0; }
};

// Appends to `out` the entries of `batch` (stamped `appended_at`) from out.next_from on, moving
// out.next_from past each and charging `budget`; true when it took any (the caller then keeps the
// batch's bytes alive in out.owners). In ReadShape::kBatches the batch is one entry where
// take_whole_batch (read_result.h) takes it so.
bool take_batch_entries(std::string_view batch, Timestamp appended_at, ReadBudget& budget, ReadResult& out,
                        ReadShape shape = ReadShape::kRecords);

}  // namespace streamd
