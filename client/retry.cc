#include "client/retry.h"

#include <thread>

#include "client/backoff.h"

namespace streamd::client {

namespace {

Status retry_while(std::chrono::milliseconds budget, const std::function<bool(const Error&)>& again,
                   const std::function<Status()>& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  const Backoff backoff;
  for (int attempts = 1; true; ++attempts) {
    Status status = attempt();
    if (status.ok() || !again(status.error())) return status;
    const std::chrono::milliseconds wait = backoff.delay(attempts);
    if (std::chrono::steady_clock::now() + wait >= deadline) return status;
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace

Status retry_unavailable(std::chrono::milliseconds budget, const std::function<Status()>& attempt) {
  return retry_while(budget, [](const Error& e) { return e.retriable(); }, attempt);
}

Status retry_transaction_call(std::chrono::milliseconds budget, const std::function<Status()>& attempt) {
  return retry_while(
      budget, [](const Error& e) { return e.retriable() || e.is(ErrorCode::kConcurrentTransactions); }, attempt);
}

}  // namespace streamd::client
