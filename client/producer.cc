#include "client/producer.h"

#include <algorithm>

#include "client/admin.h"
#include "client/append_encoding.h"
#include "client/partitioner.h"
#include "client/retry.h"
#include "proto/producer_window.h"
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
  if (options.idempotent && static_cast<size_t>(options.max_in_flight) > kProducerWindow) {
    // A resend the broker no longer recognises would be refused although written, and sent again.
    return Error(ErrorCode::kStreamMisconfigured,
                 "an idempotent producer has at most " + std::to_string(kProducerWindow) +
                     " batches in flight per partition, the broker recognising a resend among the last " +
                     std::to_string(kProducerWindow) + "; lower max_in_flight or turn idempotence off",
                 {{"field", "max_in_flight"}, {"max_in_flight", std::to_string(options.max_in_flight)}});
  }
  int32_t partitions = options.partitions;
  std::vector<int32_t> unkeyed;
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
    if (description.ok()) unkeyed = description->unkeyed_partitions();
  }
  if (unkeyed.empty()) {
    for (int32_t p = 0; p < partitions; ++p) unkeyed.push_back(p);
  }
  if (!options.transactional_id.empty() && (!options.idempotent || !options.identity)) {
    return Error(ErrorCode::kStreamMisconfigured, "a transactional producer is idempotent and given its identity",
                 {{"field", "transactional_id"}, {"transactional_id", options.transactional_id}});
  }
  std::optional<ProducerIdentity> identity = options.identity;
  if (options.idempotent && !identity) {
    auto given = init_identity(connection, std::nullopt, options.delivery_timeout);
    if (!given.ok()) return given.error();
    identity = *given;
  }
  return std::unique_ptr<Producer>(
      new Producer(connection, std::move(stream), std::move(options), partitions, std::move(unkeyed), identity));
}

Producer::Producer(Connection& connection, std::string stream, ProducerOptions options, int32_t partitions,
                   std::vector<int32_t> unkeyed, std::optional<ProducerIdentity> identity)
    : connection_(connection),
      stream_(std::move(stream)),
      options_(std::move(options)),
      partitions_(partitions),
      identity_(identity),
      unkeyed_(std::move(unkeyed)) {
  // Unkeyed records start on the partition before the `id % n`-th of the n they rotate over, so the
  // first batch lands there: producers opened one after another (each `streamctl produce`) start on
  // different partitions rather than all on the same one.
  const auto n = static_cast<int64_t>(unkeyed_.size());
  if (identity_) sticky_ = static_cast<size_t>((identity_->id + n - 1) % n);
  sender_ = std::thread([this] { sender_loop(); });
}

Result<ProducerIdentity> Producer::init_identity(Connection& connection,
                                                 const std::optional<ProducerIdentity>& current,
                                                 std::chrono::milliseconds budget) {
  Admin admin(connection);
  Result<ProducerIdentity> identity = Error(ErrorCode::kUnavailable);
  Status s = retry_unavailable(budget, [&] {
    identity = admin.init_producer(current);
    return identity.status();
  });
  if (!s.ok()) return s.error();
  return identity;
}

std::optional<ProducerIdentity> Producer::identity() const {
  std::lock_guard lock(mutex_);
  return identity_;
}

bool Producer::needs_new_epoch() const {
  std::lock_guard lock(mutex_);
  return bump_pending_;
}

void Producer::reset_identity(ProducerIdentity identity) {
  {
    std::lock_guard lock(mutex_);
    identity_ = identity;
    bump_pending_ = false;
    for (auto& [lane_id, lane] : lanes_) {
      lane.next_sequence = 0;
      lane.renumber_from.reset();
      lane.out_of_order = false;
    }
  }
  cv_.notify_one();
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

int32_t Producer::lane_for(const Record& record, size_t bytes, size_t encoded_estimate) {
  // On one partition the unkeyed round-robin is moot: sharing the lane keeps the records in send order.
  if (!record.key.empty() || partitions_ == 1) return partition_of(record.key, partitions_);
  if (!identity_) return kUnkeyedLane;
  // An idempotent batch names its partition: unkeyed records fill one partition's batch, and the next
  // batch they start goes to the next of those the broker's rotation takes.
  if (!fits(lanes_[unkeyed_[sticky_]], bytes, encoded_estimate)) sticky_ = (sticky_ + 1) % unkeyed_.size();
  return unkeyed_[sticky_];
}

bool Producer::fits(const Lane& lane, size_t bytes, size_t encoded_estimate) const {
  if (!lane.back_open) return false;
  const Batch& open = lane.queue.back();
  if (open.records >= options_.batch_records) return false;
  return open.records == 0 || (open.bytes + bytes <= options_.batch_bytes &&
                               (frame_budget_ == 0 || open.encoded.size() + encoded_estimate <= frame_budget_));
}

void Producer::send(Record record, DeliveryCallback done) {
  const size_t bytes = record_bytes(record);
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
  Lane& lane = lanes_[lane_for(record, bytes, encoded_estimate)];
  if (!fits(lane, bytes, encoded_estimate)) {
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
  // A sender that is not waiting looks at every lane before it waits again. A waiting one is woken
  // only when this record makes a batch sendable now (full, or a flush under way), or starts one whose
  // linger ends before the sender would wake anyway: a transaction's records start a batch on each of
  // its partitions in turn, and all but the first would otherwise wake it for nothing.
  if (sender_sleeping_ && (full || flushing_ > 0 ||
                           (batch.records == 1 && batch.created + options_.linger < sender_wake_))) {
    cv_.notify_one();
  }
}

void Producer::flush() {
  flush_all({this});
}

void Producer::flush_all(const std::vector<Producer*>& producers) {
  for (Producer* p : producers) {
    std::lock_guard lock(p->mutex_);
    ++p->flushing_;
    p->cv_.notify_one();
  }
  for (Producer* p : producers) {
    std::unique_lock lock(p->mutex_);
    p->flushed_cv_.wait(lock, [&] { return p->outstanding_records_ == 0; });
    --p->flushing_;
  }
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
      if (lane.renumber_from || lane.out_of_order) {
        if (lane.in_flight > 0) continue;
        if (lane.renumber_from) {
          renumber(lane);
        } else {
          lane.out_of_order = false;
          bump_pending_ = true;  // the broker expects a sequence this producer never gave: start over
        }
      }
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
        // Before a new epoch, only the resends of batches sent under this one, which its sequences
        // must settle (written once, or refused).
        if (bump_pending_ && front.sequence < 0) break;
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
    // A new epoch is asked for only when something waits to go under it.
    if (bump_pending_ && to_send.empty() && outstanding_records_ > 0 && !abandoned_ && !sent_under_epoch()) {
      bump_epoch(lock);
      continue;
    }
    if (to_send.empty()) {
      if (stopping_ && outstanding_records_ == 0) return;
      sender_sleeping_ = true;
      sender_wake_ = wake;
      cv_.wait_until(lock, wake);
      sender_sleeping_ = false;
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
  std::optional<AppendStamp> stamp;
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
    if (lane.draining || lane.out_of_order || lane.renumber_from) {
      if (--lane.in_flight == 0) lane.socket = 0;
      requeue(lane, std::move(batch));
      cv_.notify_one();
      return;
    }
    if (identity_) {
      if (batch.sequence < 0) {
        batch.sequence = lane.next_sequence;
        lane.next_sequence += static_cast<int64_t>(batch.records);
      }
      constexpr int64_t kSequences = int64_t{1} << 31;  // sequences wrap from 2^31 - 1 to 0
      stamp = AppendStamp{identity_->id, identity_->epoch, static_cast<int32_t>(batch.sequence % kSequences), lane_id,
                          options_.transactional_id};
    }
  }
  auto shared = std::make_shared<Batch>(std::move(batch));
  const std::string head = encode_append_head(stream_, shared->encoded.size(), stamp);
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

bool Producer::sent_under_epoch() const {
  for (const auto& [lane_id, lane] : lanes_) {
    if (lane.in_flight > 0 || lane.renumber_from || lane.out_of_order) return true;
    for (const Batch& b : lane.queue) {
      if (b.sequence >= 0) return true;
    }
  }
  return false;
}

void Producer::renumber(Lane& lane) {
  const int64_t from = *lane.renumber_from;
  lane.renumber_from.reset();
  lane.out_of_order = false;
  lane.next_sequence = from;
  // Batches after the refused one were never written (the broker refused them out of order, or
  // would): they take their sequences again in order. Earlier ones keep theirs, for their resends.
  for (Batch& b : lane.queue) {
    if (b.sequence >= from) b.sequence = -1;
  }
}

void Producer::bump_epoch(std::unique_lock<std::mutex>& lock) {
  const std::optional<ProducerIdentity> current = identity_;
  Result<ProducerIdentity> next = Error(
      ErrorCode::kInvalidTxnState,
      "A batch of the transaction may or may not have been written: abort the transaction",
      {{"transactional_id", options_.transactional_id}});
  // A transactional id's epochs are the coordinator's: the transaction's abort takes the next one.
  if (options_.transactional_id.empty()) {
    lock.unlock();
    next = init_identity(connection_, current, options_.delivery_timeout);
    lock.lock();
  }
  if (next.ok()) {
    bump_pending_ = false;
    identity_ = *next;
    for (auto& [lane_id, lane] : lanes_) lane.next_sequence = 0;
    return;
  }
  // Without a new epoch nothing queued can be sent safely: each fails with why.
  std::vector<Batch> dropped;
  for (auto& [lane_id, lane] : lanes_) {
    for (Batch& b : lane.queue) dropped.push_back(std::move(b));
    lane.queue.clear();
    lane.back_open = false;
  }
  lock.unlock();
  for (Batch& b : dropped) finish(b, Status(next.error()), {});
  lock.lock();
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
  bool wake_sender = true;
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
    if (identity_ && !abandoned_ && !status.ok() && batch.sequence >= 0) {
      if (status.error().is(ErrorCode::kOutOfOrderSequence)) {
        // Nothing was written: it goes again, numbered anew once the lane's answers are in.
        lane.out_of_order = true;
        batch.sequence = -1;
        requeue(lane, std::move(batch));
        cv_.notify_one();
        return;
      }
      if (status.error().retriable()) {
        bump_pending_ = true;  // retries ran out: written or not is unknown, so its sequence is spent
      } else {
        // A definite refusal wrote nothing and consumed no sequence: the broker expects this one next.
        lane.renumber_from = std::min(lane.renumber_from.value_or(batch.sequence), batch.sequence);
      }
    }
    // The sender waits on this answer only if the lane holds batches that wanted room in flight, or
    // waits for its answers to settle it (as after the refusal above), or the producer for its epoch's
    // batches to settle, or to stop.
    wake_sender = !lane.queue.empty() || lane.draining || lane.out_of_order || lane.renumber_from.has_value() ||
                  bump_pending_ || stopping_;
  }
  finish(batch, outcome, result, wake_sender);
}

void Producer::finish(Batch& batch, const Status& status, const AppendResult& result, bool wake_sender) {
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
    if (wake_sender) cv_.notify_one();
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
  if (outstanding_records_ == 0) flushed_cv_.notify_all();
}

}  // namespace streamd::client
