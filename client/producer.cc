#include "client/producer.h"

#include <algorithm>

#include "client/admin.h"
#include "client/append_encoding.h"
#include "client/partitioner.h"
#include "client/retry.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

size_t record_bytes(const Record& record) {
  size_t bytes = record.key.size() + record.payload.size();
  for (const Header& h : record.headers) bytes += h.name.size() + h.value.size();
  return bytes;
}

}  // namespace

Result<std::unique_ptr<Producer>> Producer::open(Connection& connection, std::string stream,
                                                 ProducerOptions options) {
  if (options.batch_records == 0 || options.max_in_flight <= 0) {
    return Error(ErrorCode::kInvalidBatchSize, {{"batch_records", std::to_string(options.batch_records)},
                                                {"max_in_flight", std::to_string(options.max_in_flight)}});
  }
  int32_t partitions = options.partitions;
  if (partitions <= 0) {
    Admin admin(connection);
    Result<StreamDescription> description = admin.describe_stream(stream);
    if (Status s = retry_unavailable(options.delivery_timeout,
                                     [&] {
                                       description = admin.describe_stream(stream);
                                       return description.status();
                                     });
        !s.ok() && !s.error().is(ErrorCode::kStreamNotFound)) {
      return s.error();
    }
    partitions = description.ok() ? std::max(description->policy.partitions, 1) : 1;
  }
  return std::unique_ptr<Producer>(
      new Producer(connection, std::move(stream), std::move(options), partitions));
}

Producer::Producer(Connection& connection, std::string stream, ProducerOptions options, int32_t partitions)
    : connection_(connection),
      stream_(std::move(stream)),
      options_(std::move(options)),
      partitions_(partitions) {
  sender_ = std::thread([this] { sender_loop(); });
}

Producer::~Producer() {
  flush();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  sender_.join();
}

uint64_t Producer::failed_records() const {
  std::lock_guard lock(mutex_);
  return failed_records_;
}

std::optional<Error> Producer::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void Producer::send(Record record, DeliveryCallback done) {
  const size_t bytes = record_bytes(record);
  // On one partition the unkeyed round-robin is moot: sharing the lane keeps the records in send order.
  const int32_t lane_id =
      record.key.empty() && partitions_ > 1 ? kUnkeyedLane : partition_of(record.key, partitions_);
  std::unique_lock lock(mutex_);
  space_cv_.wait(lock, [&] {
    return abandoned_ || buffered_bytes_ == 0 || buffered_bytes_ + bytes <= options_.max_buffered_bytes;
  });
  if (abandoned_) {
    const Error reason = *abandoned_;
    ++failed_records_;
    lock.unlock();
    if (done) done(reason);
    return;
  }
  if (frame_budget_ == 0 && connection_.max_frame_bytes() > 0) {
    // What the stream name, the id and the framing may take of a frame, generously.
    constexpr size_t kRequestOverhead = 512;
    frame_budget_ = connection_.max_frame_bytes() > kRequestOverhead
                        ? static_cast<size_t>(connection_.max_frame_bytes()) - kRequestOverhead
                        : 1;
  }
  // A record's encoding adds a tag and a length to the record and to each of its fields and headers.
  const size_t encoded_estimate = bytes + 16 + 8 * record.headers.size();
  Lane& lane = lanes_[lane_id];
  const Batch* open = lane.back_open ? &lane.queue.back() : nullptr;
  if (open == nullptr || open->records >= options_.batch_records ||
      (open->records > 0 &&
       (open->bytes + bytes > options_.batch_bytes ||
        (frame_budget_ > 0 && open->encoded.size() + encoded_estimate > frame_budget_)))) {
    Batch batch;
    batch.seq = lane.next_seq++;
    batch.created = Clock::now();
    lane.queue.push_back(std::move(batch));
    lane.back_open = true;
  }
  Batch& batch = lane.queue.back();
  append_encoded_record(&batch.encoded, record);
  ++batch.records;
  // Callbacks are kept by index; a batch without any keeps none.
  if (done) {
    batch.callbacks.resize(batch.records);
    batch.callbacks.back() = std::move(done);
  }
  batch.bytes += bytes;
  buffered_bytes_ += bytes;
  ++outstanding_records_;
  const bool full = batch.records >= options_.batch_records || batch.bytes >= options_.batch_bytes;
  // A record joining an open batch wakes the sender only when it makes the batch worth sending (or
  // starts a new one, whose linger the sender must time).
  if (full || batch.records == 1) cv_.notify_one();
}

void Producer::flush() {
  std::unique_lock lock(mutex_);
  ++flushing_;
  cv_.notify_one();
  space_cv_.wait(lock, [&] { return outstanding_records_ == 0; });
  --flushing_;
}

bool Producer::ready(const Lane& lane, const Batch& batch, Clock::time_point now) const {
  if (&batch != &lane.queue.back() || !lane.back_open) return true;
  return flushing_ > 0 || stopping_ || batch.records >= options_.batch_records ||
         batch.bytes >= options_.batch_bytes || now - batch.created >= options_.linger;
}

void Producer::sender_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    const Clock::time_point now = Clock::now();
    std::vector<std::pair<int32_t, Batch>> to_send;
    Clock::time_point wake = now + std::chrono::seconds(1);
    for (auto& [lane_id, lane] : lanes_) {
      if (lane.draining) {
        if (lane.in_flight > 0) continue;
        if (now < lane.retry_at) {
          wake = std::min(wake, lane.retry_at);
          continue;
        }
        lane.draining = false;
      }
      while (!lane.queue.empty() && lane.in_flight < options_.max_in_flight) {
        Batch& front = lane.queue.front();
        if (!ready(lane, front, now)) {
          wake = std::min(wake, front.created + options_.linger);
          break;
        }
        if (lane.queue.size() == 1) lane.back_open = false;
        ++lane.in_flight;
        to_send.emplace_back(lane_id, std::move(front));
        lane.queue.pop_front();
      }
    }
    if (to_send.empty()) {
      if (stopping_ && outstanding_records_ == 0) return;
      cv_.wait_until(lock, wake);
      continue;
    }
    dispatching_ = true;
    lock.unlock();
    for (auto& [lane_id, batch] : to_send) dispatch(lane_id, std::move(batch));
    lock.lock();
    dispatching_ = false;
    space_cv_.notify_all();  // abandon() may be waiting for the dispatch to end
  }
}

void Producer::dispatch(int32_t lane_id, Batch batch) {
  {
    std::unique_lock lock(mutex_);
    Lane& lane = lanes_[lane_id];
    if (abandoned_) {
      if (--lane.in_flight == 0) lane.socket = 0;
      const Status reason(*abandoned_);
      lock.unlock();
      finish(batch, reason, {});
      return;
    }
    // An earlier batch of this round already failed: this one goes back to wait for the resend.
    if (lane.draining) {
      if (--lane.in_flight == 0) lane.socket = 0;
      requeue(lane, std::move(batch));
      cv_.notify_one();
      return;
    }
  }
  auto shared = std::make_shared<Batch>(std::move(batch));
  const std::string head = encode_append_head(stream_, shared->encoded.size());
  const std::string_view fields[] = {head, shared->encoded};
  // A partition's in-flight batches all ride one socket: if it breaks they all fail together and are
  // resent in order, and none can be appended on a newer socket ahead of an older one that was lost.
  uint64_t same_socket_as;
  {
    std::lock_guard lock(mutex_);
    same_socket_as = lanes_[lane_id].socket;
  }
  uint64_t sent_on = 0;
  connection_.call_async_encoded(
      fields, {},
      [this, lane_id, shared](const Status& status, v1::Response& response) {
        AppendResult result{response.append().partition(), response.append().first(),
                            response.append().last()};
        on_answer(lane_id, *shared, status, result);
      },
      same_socket_as, &sent_on);
  std::lock_guard lock(mutex_);
  Lane& lane = lanes_[lane_id];
  if (sent_on != 0 && lane.in_flight > 0) lane.socket = sent_on;
}

void Producer::requeue(Lane& lane, Batch batch) {
  auto at = std::find_if(lane.queue.begin(), lane.queue.end(),
                         [&](const Batch& queued) { return queued.seq > batch.seq; });
  lane.queue.insert(at, std::move(batch));
}

void Producer::abandon(const Error& reason) {
  std::vector<Batch> dropped;
  {
    std::lock_guard lock(mutex_);
    if (abandoned_) return;
    abandoned_ = reason;
    for (auto& [lane_id, lane] : lanes_) {
      for (Batch& batch : lane.queue) dropped.push_back(std::move(batch));
      lane.queue.clear();
      lane.back_open = false;
    }
  }
  space_cv_.notify_all();
  cv_.notify_all();
  for (Batch& batch : dropped) finish(batch, Status(reason), {});
  // The batches in flight fail as their requests do. A dispatch under way when abandoned_ was set
  // may still be connecting, which close() cuts short; later dispatches see abandoned_.
  std::unique_lock lock(mutex_);
  do {
    lock.unlock();
    connection_.close();
    lock.lock();
  } while (!space_cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return !dispatching_; }));
}

void Producer::on_answer(int32_t lane_id, Batch& batch, const Status& status, const AppendResult& result) {
  Status outcome = status;
  {
    std::lock_guard lock(mutex_);
    Lane& lane = lanes_[lane_id];
    if (--lane.in_flight == 0) lane.socket = 0;
    const Clock::time_point now = Clock::now();
    // After abandon() a failure is final, and reported with abandon's reason.
    if (!status.ok() && abandoned_) outcome = Status(*abandoned_);
    if (!abandoned_ && !status.ok() && status.error().retriable() &&
        now - batch.created < options_.delivery_timeout) {
      ++batch.attempts;
      lane.draining = true;
      lane.retry_at = std::max(lane.retry_at, now + options_.retry_backoff.delay(batch.attempts));
      requeue(lane, std::move(batch));
      cv_.notify_one();
      return;
    }
  }
  finish(batch, outcome, result);
}

void Producer::finish(Batch& batch, const Status& status, const AppendResult& result) {
  std::vector<DeliveryCallback> callbacks;
  size_t records = 0;
  {
    std::lock_guard lock(mutex_);
    callbacks = std::move(batch.callbacks);
    records = batch.records;
    buffered_bytes_ -= batch.bytes;
    if (!status.ok()) {
      failed_records_ += batch.records;
      last_error_ = status.error();
    }
    cv_.notify_one();
  }
  space_cv_.notify_all();
  if (status.ok() && options_.on_batch) options_.on_batch(result);
  for (size_t i = 0; i < callbacks.size(); ++i) {
    if (!callbacks[i]) continue;
    if (status.ok()) {
      callbacks[i](Delivery{result.partition, result.first + i});
    } else {
      callbacks[i](status.error());
    }
  }
  // Counted only now, so that flush() returns after the callbacks of what it waited for have run.
  // The notification is sent with the lock held: a flush() in the destructor may return as soon as
  // the lock is released, and the producer, this condition variable with it, be gone.
  std::lock_guard lock(mutex_);
  outstanding_records_ -= records;
  space_cv_.notify_all();
}

}  // namespace streamd::client
