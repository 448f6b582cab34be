#include "client/retry.h"

#include <thread>

#include "client/backoff.h"

namespace streamd::client {

Status retry_unavailable(std::chrono::milliseconds budget, const std::function<Status()>& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  const Backoff backoff;
  for (int attempts = 1; true; ++attempts) {
    Status status = attempt();
    if (status.ok() || !status.error().retriable()) return status;
    const std::chrono::milliseconds wait = backoff.delay(attempts);
    if (std::chrono::steady_clock::now() + wait >= deadline) return status;
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace streamd::client
