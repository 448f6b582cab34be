// Isolation: what a reader sees of transactions (docs/TRANSACTIONS.md §"Reading"). Markers are never
// records to anyone; read_committed readers stop at the last stable offset and skip the records of
// aborted transactions, read_uncommitted ones read to the end, aborted records included, as Kafka's do.
// The records dropped become holes a reader steps over, as compaction's are.
#pragma once

#include <cstdint>
#include <vector>

#include "server/storage/aborted_txn.h"
#include "server/storage/read_result.h"

namespace streamd {

enum class Isolation : uint8_t {
  kReadCommitted,    // the native default, and Kafka's isolation level 1
  kReadUncommitted,  // Kafka's isolation level 0
};

// Whether any entry of `read` comes from a transactional batch (markers included): only then has
// isolation anything to drop.
bool any_transactional(const ReadResult& read);

// Leaves in `read`, a read from `from`, what a reader at `isolation` sees: no marker; at read_committed
// nothing at or past `limit` (the last stable offset) and no record of a transaction in `aborted`.
// next_from then stops at `limit` when the read went past it, never before `from`.
void apply_isolation(ReadResult& read, Offset from, Isolation isolation, Offset limit,
                     const std::vector<AbortedTxn>& aborted);

}  // namespace streamd
