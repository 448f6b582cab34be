#include "client/consumer.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "client/admin.h"
#include "client/response_decoding.h"
#include "client/retry.h"
#include "client/wire.h"

namespace streamd::client {

Result<std::unique_ptr<Consumer>> Consumer::open(Connection& connection, std::string stream,
                                                 ConsumerOptions options) {
  if (options.max_records <= 0) {
    return Error(ErrorCode::kInvalidBatchSize, {{"max_records", std::to_string(options.max_records)}});
  }
  std::unique_ptr<Consumer> consumer(new Consumer(connection, std::move(stream), std::move(options)));
  if (Status s = consumer->resolve_start(); !s.ok()) return s.error();
  return consumer;
}

Status Consumer::resolve_start() {
  Admin admin(connection_);
  return retry_unavailable(options_.retry_for, [&]() -> Status {
    partitions_ = options_.partitions;
    if (partitions_.empty()) {
      auto description = admin.describe_stream(stream_);
      if (!description.ok()) return description.error();
      for (const PartitionInfo& p : description->partitions) partitions_.push_back(p.partition);
      if (partitions_.empty()) {
        for (int32_t p = 0; p < std::max(description->policy.partitions, 1); ++p) partitions_.push_back(p);
      }
    }
    for (int32_t partition : partitions_) {
      paused_[partition] = false;
      if (!options_.group.empty()) {
        auto committed = admin.committed(stream_, options_.group, partition);
        if (committed.ok()) {
          cursors_[partition] = *committed;
          committed_[partition] = *committed;
          continue;
        }
        if (!committed.error().is(ErrorCode::kUnknownGroup)) return committed.error();
      }
      const StartPosition& start = options_.start;
      if (start.kind == StartPosition::Kind::kOffset) {
        cursors_[partition] = start.offset;
      } else if (start.kind == StartPosition::Kind::kTime) {
        auto offset = admin.offset_at(stream_, partition, start.time_us);
        if (!offset.ok()) return offset.error();
        cursors_[partition] = *offset;
      } else {
        auto bounds = admin.bounds(stream_, partition);
        if (!bounds.ok()) return bounds.error();
        cursors_[partition] = start.kind == StartPosition::Kind::kEarliest ? bounds->first : bounds->next;
      }
    }
    return Status();
  });
}

Result<std::vector<Entry>> Consumer::poll() {
  return poll(options_.wait);
}

struct Consumer::PendingRead {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::vector<Entry> entries;
  std::vector<std::pair<int32_t, uint64_t>> next;  // partition, the cursor after this answer
};

// Runs on the connection's reader thread: decodes the ReadResponse's bytes straight into entries.
void Consumer::take_answer(const Status& status, std::string_view body, PendingRead& pending) {
  Status outcome = status;
  ReadAnswer answer;
  if (outcome.ok() && !decode_read_response(body, &answer)) {
    outcome = Error(ErrorCode::kProtocolError, "unparsable Read answer from the broker");
  }
  if (outcome.ok() && answer.error) outcome = *answer.error;
  std::lock_guard lock(pending.mutex);
  pending.status = outcome;
  if (outcome.ok()) {
    pending.entries = std::move(answer.entries);
    pending.next = std::move(answer.next);
  }
  pending.done = true;
  pending.cv.notify_one();
}

std::shared_ptr<Consumer::PendingRead> Consumer::send_read(std::chrono::milliseconds wait) {
  v1::Request request;
  auto* read = request.mutable_read();
  read->set_stream(stream_);
  read->set_max_records(options_.max_records);
  read->set_max_bytes(options_.max_bytes);
  read->set_wait_ms(static_cast<uint32_t>(std::max<int64_t>(wait.count(), 0)));
  read->set_isolation(options_.isolation == Isolation::kReadCommitted ? v1::READ_COMMITTED : v1::READ_UNCOMMITTED);
  for (int32_t partition : partitions_) {
    if (paused_[partition]) continue;
    v1::Cursor* cursor = read->add_cursors();
    cursor->set_partition(partition);
    cursor->set_from(cursors_[partition]);
  }
  if (read->cursors_size() == 0) return nullptr;
  auto pending = std::make_shared<PendingRead>();
  // The long poll may legitimately take `wait`; the request's deadline is on top of it.
  connection_.call_async_raw(
      request, wait + connection_.options().request_timeout,
      [pending](const Status& status, std::string_view body) { take_answer(status, body, *pending); });
  return pending;
}

Status Consumer::finish_read(PendingRead& read, std::vector<Entry>* entries) {
  std::unique_lock lock(read.mutex);
  read.cv.wait(lock, [&] { return read.done; });
  if (!read.status.ok()) return read.status;
  *entries = std::move(read.entries);
  for (const auto& [partition, next] : read.next) {
    auto cursor = cursors_.find(partition);
    if (cursor != cursors_.end()) cursor->second = std::max(cursor->second, next);
  }
  return Status();
}

Result<std::vector<Entry>> Consumer::poll(std::chrono::milliseconds wait) {
  std::vector<Entry> entries;
  std::shared_ptr<PendingRead> prefetched = std::move(prefetch_);
  prefetch_.reset();
  bool answered = false;
  // Only the answer to exactly the request this poll would send may stand in for it.
  if (prefetched && prefetch_version_ == version_ && prefetch_wait_ == wait) {
    answered = finish_read(*prefetched, &entries).ok();
  }
  if (!answered) {
    Status status = retry_unavailable(options_.retry_for, [&]() -> Status {
      std::shared_ptr<PendingRead> read = send_read(wait);
      return read ? finish_read(*read, &entries) : Status();
    });
    if (!status.ok()) return status.error();
  }
  if (options_.read_ahead) {
    prefetch_ = send_read(wait);
    prefetch_version_ = version_;
    prefetch_wait_ = wait;
  }
  return entries;
}

Status Consumer::commit() {
  if (options_.group.empty()) {
    return Error(ErrorCode::kStreamMisconfigured, "commit needs a consumer group", {{"field", "group"}});
  }
  std::vector<v1::Request> requests;
  std::vector<std::pair<int32_t, uint64_t>> commits;
  for (const auto& [partition, cursor] : cursors_) {
    auto known = committed_.find(partition);
    if (known != committed_.end() && known->second == cursor) continue;
    v1::Request request;
    auto* body = request.mutable_commit();
    body->set_stream(stream_);
    body->set_group(options_.group);
    body->set_partition(partition);
    body->set_next(cursor);
    requests.push_back(std::move(request));
    commits.emplace_back(partition, cursor);
  }
  if (requests.empty()) return Status();
  return retry_unavailable(options_.retry_for, [&]() -> Status {
    std::vector<Status> statuses;
    std::vector<v1::Response> responses;
    wire::call_all(connection_, requests, {}, &statuses, &responses);
    Status first_error;
    for (size_t i = 0; i < statuses.size(); ++i) {
      if (statuses[i].ok()) {
        committed_[commits[i].first] = commits[i].second;
      } else if (first_error.ok()) {
        first_error = statuses[i];
      }
    }
    return first_error;
  });
}

}  // namespace streamd::client
