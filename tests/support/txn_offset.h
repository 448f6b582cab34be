// A staged offset for the transaction tests, built field by field: gcc 12 at -O3 warns that a braced
// TxnOffset's nested stream string may be used uninitialized (a false positive, an error under
// STREAMD_WERROR). And a transactional id's header, producer 42 with a one-minute timeout.
#pragma once

#include <cstdint>
#include <string>

#include "server/storage/txn_log.h"

namespace streamd::testing {

inline TxnOffset offset_of(std::string group, std::string stream, int32_t partition, uint64_t next,
                           std::string metadata) {
  TxnOffset o;
  o.group = std::move(group);
  o.at.stream = std::move(stream);
  o.at.partition = partition;
  o.next = Offset(next);
  o.metadata = std::move(metadata);
  return o;
}

inline TxnHeader txn_header(const std::string& id, TxnStatus status, int16_t epoch = 0) {
  return {id, 42, epoch, 60'000, status, Timestamp(1'000)};
}

}  // namespace streamd::testing
