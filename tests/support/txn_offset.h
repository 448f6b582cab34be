// A staged offset for the transaction tests, built field by field: gcc 12 at -O3 warns that a braced
// TxnOffset's nested stream string may be used uninitialized (a false positive, an error under
// STREAMD_WERROR).
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

}  // namespace streamd::testing
