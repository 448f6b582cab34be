// Consumer: long-poll reads over a set of partitions of one stream (docs/SEMANTICS.md §9): one
// partition read in order, or several read together with their entries
// interleaved in one answer, each partition still in offset order.
//
// It keeps one cursor per partition (the next offset to read), resolved at open() from the optional
// group's committed offset, else from the start position (earliest, latest, an offset or a time). A
// poll asks the broker for every cursor not paused at once, waiting up to `wait` for a record, and
// advances each cursor past what it returns; seek() moves a cursor back (or forward), pause() leaves
// a partition out of the polls until resume(). commit() makes the group's committed offsets the
// cursors. A broker that cannot be reached is retried with backoff for `retry_for` before a poll
// reports UNAVAILABLE; cursors are unchanged by a failed poll, so nothing is skipped or repeated.
//
// Not thread-safe: one thread polls a Consumer. Its Connection must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

struct ConsumerOptions {
  std::vector<int32_t> partitions;  // empty: every partition of the stream
  StartPosition start = StartPosition::earliest();
  std::string group;           // when set, start from the group's committed offsets where it has one
  int32_t max_records = 1000;  // per partition per poll
  uint64_t max_bytes = 0;      // per partition per poll; 0 is the broker's default
  std::chrono::milliseconds wait{1000};
  std::chrono::milliseconds retry_for{30'000};
  Isolation isolation = Isolation::kReadCommitted;
  // Ask for the next answer as soon as one arrives, so that the broker reads while the caller works.
  // A prefetched answer is used only if no cursor was moved, paused or resumed since it was asked.
  bool read_ahead = true;
};

class Consumer {
 public:
  static Result<std::unique_ptr<Consumer>> open(Connection& connection, std::string stream,
                                                ConsumerOptions options);

  // Up to max_records per polled partition; empty when nothing arrived within `wait`. A per-partition
  // refusal (OFFSET_TRIMMED, OFFSET_AHEAD, UNKNOWN_PARTITION) is returned as the error, with field
  // `partition`, and no cursor moves.
  Result<std::vector<Entry>> poll();
  Result<std::vector<Entry>> poll(std::chrono::milliseconds wait);

  const std::vector<int32_t>& partitions() const { return partitions_; }
  uint64_t position(int32_t partition) const { return cursors_.at(partition); }
  void seek(int32_t partition, uint64_t offset) {
    cursors_.at(partition) = offset;
    ++version_;
  }
  void pause(int32_t partition) {
    paused_[partition] = true;
    ++version_;
  }
  void resume(int32_t partition) {
    paused_[partition] = false;
    ++version_;
  }
  bool is_paused(int32_t partition) const { return paused_.at(partition); }

  // Commits, for the group, every cursor that moved since the last commit. STREAM_MISCONFIGURED
  // (field group) when the consumer has no group.
  Status commit();

  const std::string& stream() const { return stream_; }

 private:
  Consumer(Connection& connection, std::string stream, ConsumerOptions options)
      : connection_(connection), stream_(std::move(stream)), options_(std::move(options)) {}
  struct PendingRead;
  Status resolve_start();
  // Sends a Read for every cursor not paused; nullptr when all are.
  std::shared_ptr<PendingRead> send_read(std::chrono::milliseconds wait);
  static void take_answer(const Status& status, std::string_view body, PendingRead& pending);
  // Waits for `read`; on success moves the cursors and hands over its entries.
  Status finish_read(PendingRead& read, std::vector<Entry>* entries);

  Connection& connection_;
  const std::string stream_;
  const ConsumerOptions options_;
  std::vector<int32_t> partitions_;
  std::map<int32_t, uint64_t> cursors_;
  std::map<int32_t, uint64_t> committed_;  // what the group holds, where known
  std::map<int32_t, bool> paused_;
  uint64_t version_ = 0;  // bumped by seek, pause and resume: a prefetch from before is stale
  std::shared_ptr<PendingRead> prefetch_;
  uint64_t prefetch_version_ = 0;
  std::chrono::milliseconds prefetch_wait_{0};
};

}  // namespace streamd::client
