// How many of an idempotent producer's last batches on a partition the broker recognises a resend
// among (docs/SEMANTICS.md §11; Kafka's window, which its clients are built around). Part of the wire
// contract: a producer with more batches than this in flight to one partition could resend one the
// broker no longer recognises, which it would refuse OUT_OF_ORDER_SEQUENCE although it was written.
// So the broker keeps this many and the client never has more in flight; defined once, here, for both.
#pragma once

#include <cstddef>

namespace streamd {

inline constexpr size_t kProducerWindow = 5;

}  // namespace streamd
