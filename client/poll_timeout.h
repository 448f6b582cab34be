// The timeout poll() takes for a blocking step with a deadline, shared by the client's sockets.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace streamd::client {

// Milliseconds left until `deadline`: 0 once it has passed, at most 1,000 s (poll() takes an int).
inline int poll_timeout_until(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1'000'000));
}

}  // namespace streamd::client
