// Backoff: the client's one exponential-backoff rule, for every retry it makes (reconnecting, resending
// a batch, retrying a parked partition, retrying a call): the first retry waits `initial`, each further
// one twice as long, never more than `max`. A plain value; safe to share between threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace streamd::client {

struct Backoff {
  std::chrono::milliseconds initial{20};
  std::chrono::milliseconds max{1'000};

  // The wait before retry number `attempt` (1 for the first; anything lower is read as 1).
  std::chrono::milliseconds delay(int attempt) const {
    const int doublings = std::clamp(attempt - 1, 0, 20);
    return std::min<std::chrono::milliseconds>(initial * (int64_t{1} << doublings), max);
  }
};

}  // namespace streamd::client
