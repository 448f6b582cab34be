// AbortedTxn: an aborted transaction's place on one partition, what read_committed readers leave out.
#pragma once

#include <cstdint>

#include "server/storage/types.h"

namespace streamd {

// Producer `producer_id`'s records in [first, marker) belong to a transaction that was aborted; `marker`
// is the offset of the abort marker that ended it (Kafka's Fetch names it by producer id and first).
struct AbortedTxn {
  int64_t producer_id = -1;
  Offset first;
  Offset marker;
  bool operator==(const AbortedTxn&) const = default;
};

}  // namespace streamd
