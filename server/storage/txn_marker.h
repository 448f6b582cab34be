// Transaction markers: the control batch that ends a producer's transaction on one partition, commit or
// abort (docs/FORMAT.md §"Transaction markers"). It is Kafka's control batch byte for byte, so that a
// Kafka Fetch can carry it as it is: a version 2 batch with the transactional and control attributes, the
// producer's id and epoch, sequence -1 and one record whose key is (version int16 = 0, type int16: 0 abort,
// 1 commit) and whose value is (version int16 = 0, coordinator epoch int32), big-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/storage/record_batch.h"

namespace streamd {

enum class MarkerType : uint8_t { kAbort = 0, kCommit = 1 };

// An unsealed marker batch (seal_batch gives it its offset) for producer `id` at `epoch`.
std::string build_txn_marker(int64_t id, int16_t epoch, MarkerType type, int32_t coordinator_epoch);

// The type of the marker `batch` is, a control batch check_batch passed; nullopt for a control record of
// another kind (Kafka has more) or one that does not parse, which ends no transaction.
std::optional<MarkerType> parse_txn_marker(std::string_view batch);

}  // namespace streamd
