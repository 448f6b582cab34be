#include "client/retry.h"

#include <algorithm>
#include <thread>

namespace streamd::client {

Status retry_unavailable(std::chrono::milliseconds budget, const std::function<Status()>& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  std::chrono::milliseconds backoff(20);
  while (true) {
    Status status = attempt();
    if (status.ok() || !status.error().retriable()) return status;
    if (std::chrono::steady_clock::now() + backoff >= deadline) return status;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace streamd::client
