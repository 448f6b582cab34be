// Reading what transactions left on a partition, through the native protocol, for the transaction
// tests of every engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/integration/wire_client.h"

namespace streamd::testing {

// The payloads of one partition at `isolation`, from offset 0.
std::vector<std::string> txn_payloads(uint16_t port, const std::string& stream, int32_t partition,
                                      v1::Isolation isolation = v1::READ_COMMITTED);

// Waits until the stream's first `partitions` partitions hold `n` records at read_uncommitted.
void wait_for_txn_records(uint16_t port, const std::string& stream, int32_t partitions, size_t n);

}  // namespace streamd::testing
