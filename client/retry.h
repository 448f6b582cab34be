// Retrying what fails UNAVAILABLE — the broker unreachable, restarting or not answering — with
// exponential backoff (20 ms doubling to 1 s) within a time budget. Every other outcome — and an
// UNAVAILABLE the client reported as definite (Error::retriable) — is final and returned at once.
// Used by the Consumer, Producer and Subscriber. Safe from any thread.
#pragma once

#include <chrono>
#include <functional>

#include "client/error.h"

namespace streamd::client {

Status retry_unavailable(std::chrono::milliseconds budget, const std::function<Status()>& attempt);
// The same, also retrying CONCURRENT_TRANSACTIONS: a transactional id's call that met another of its
// requests still being carried out (docs/TRANSACTIONS.md).
Status retry_transaction_call(std::chrono::milliseconds budget, const std::function<Status()>& attempt);

}  // namespace streamd::client
