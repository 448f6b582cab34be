// Subscriber: a consumer group's handler loop (docs/SEMANTICS.md §7). It reads a stream's partitions for one
// consumer group, calls the handler on every record in each partition's order, and commits the
// group's offsets after the records are handled — at-least-once: a crash between handling and
// committing hands the same records to the next run, which is why the handler must be declared
// idempotent.
//
// A record the handler fails on (returns false or throws) parks its partition at that record: the
// partition is left out of the reads and the record is retried after a backoff that doubles from
// retry_initial up to retry_max, never skipped, while every other partition goes on. Where a
// partition starts when the group has committed nothing there is the caller's explicit choice
// (start_when_unknown), never a silent default.
//
// create() refuses, with SUBSCRIBER_MISCONFIGURED and field `field` naming it, a missing group, a
// missing handler, a handler not declared idempotent, or no start_when_unknown.
//
// Thread-safety: run() on one thread; stop() from any thread (or from the handler). The handler and
// on_park run on the run() thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

class Consumer;

struct SubscriberOptions {
  std::string group;
  // True when the record is handled; false (or an exception) parks its partition.
  std::function<bool(const Entry&)> handler;
  // The handler's author asserts that handling a record twice is harmless.
  bool handler_idempotent = false;
  std::optional<StartPosition> start_when_unknown;
  std::vector<int32_t> partitions;  // empty: every partition
  int32_t max_records = 100;        // per partition per read
  std::chrono::milliseconds wait{500};
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_max{30'000};
  // Called each time a partition parks: the record's offset and how many times it has failed.
  std::function<void(int32_t partition, uint64_t offset, int failures)> on_park;
};

class Subscriber {
 public:
  static Result<std::unique_ptr<Subscriber>> create(Connection& connection, std::string stream,
                                                    SubscriberOptions options);

  // Handles records until stop(); returns ok after stop(), or the error that made it give up
  // (OFFSET_TRIMMED on a partition, STREAM_NOT_FOUND, …). An unreachable broker is waited out.
  Status run();
  void stop() { stopping_ = true; }

 private:
  // Opens the group's consumer, retrying while the broker is unavailable; null when stopped first.
  Result<std::unique_ptr<Consumer>> open_consumer();

  Subscriber(Connection& connection, std::string stream, SubscriberOptions options)
      : connection_(connection), stream_(std::move(stream)), options_(std::move(options)) {}

  Connection& connection_;
  const std::string stream_;
  const SubscriberOptions options_;
  std::atomic<bool> stopping_{false};
};

}  // namespace streamd::client
