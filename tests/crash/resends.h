// resend(): after a restart and its verification, every batch of an idempotent producer that the cut
// left unanswered is sent again with its stamp, as a producer that lost its answer does
// (docs/SEMANTICS.md §11). One the verification found whole must be answered with the offsets it was
// found at, and nothing written: the producers' states survived the cut. One it did not find is
// written now, at new offsets. Anything else is a failure in the ledger.
#pragma once

#include <cstdint>

#include "tests/crash/ledger.h"

namespace streamd::crash {

struct ResendCounts {
  uint64_t recognised = 0;  // found before, answered with their offsets
  uint64_t written = 0;     // lost at the cut, written by the resend
};

ResendCounts resend(Ledger& ledger, uint16_t port);

}  // namespace streamd::crash
