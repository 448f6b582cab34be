// Producer: appends records to one stream in batches, pipelined, with a delivery result per record.
//
// Records are grouped by partition with the broker's own rule (partition_of of the key over the
// stream's partition count). Unkeyed records fill one partition's batch, then the next partition's
// (an idempotent producer names each batch's partition); without idempotence they form batches of
// their own, which the broker spreads over the partitions in turn. A partition's batch is sent when it holds batch_records records or
// batch_bytes bytes, or when its first record has waited `linger`; it never grows past the broker's
// frame limit (a single record that does fails FRAME_TOO_LARGE). Up to max_in_flight batches per
// partition are outstanding on the connection at once; the broker assigns offsets to one partition's
// pipelined appends in the order they were sent, so a key's records keep their order.
//
// A batch that fails UNAVAILABLE (broker unreachable, restarting, broken socket, timeout) is retried
// with backoff until delivery_timeout has passed since it was created. The Connection fails every
// outstanding request together when its socket breaks, so all of a partition's unanswered batches
// come back; the partition sends nothing more until they have, then resends them in their original
// order: retries never reorder a key's records. Any other error fails the batch's records with that
// error.
//
// Idempotence (the default; docs/CLIENT.md §Producer): the producer takes an identity from the broker
// (InitProducer) and stamps each batch with it and the sequence of its first record on its partition,
// so a resend of a batch that had been appended before its answer was lost is answered with the
// original offsets and written once. Sequences follow the batches of a partition in order: a batch the
// broker refused consumed none, so the batches sent after it (which the broker refuses
// OUT_OF_ORDER_SEQUENCE, writing nothing) are numbered again from its sequence and resent. A batch
// that fails without a definite answer (delivery_timeout) may or may not be written; the producer then
// drains every partition and takes its identity's next epoch, which starts every partition's
// sequences again at 0. Without idempotence a resent batch whose answer was lost may be appended
// twice (at-least-once).
//
// send() blocks while max_buffered_bytes are waiting for an answer: a producer fed from an
// unbounded input runs in bounded memory.
//
// Callbacks: every record sent gets exactly one delivery callback (its partition and offset, or its
// error), and every acknowledged batch exactly one on_batch, before the record's callbacks. They run
// on the connection's reactor thread (connection.h) — or, for a record that fails before it is sent,
// on the thread that failed it — so keep them short and never call send() or flush() from them.
//
// Thread-safety: send() and flush() may be called from any thread. The destructor flushes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/backoff.h"
#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

struct ProducerOptions {
  size_t batch_records = 1000;
  size_t batch_bytes = 1 << 20;
  std::chrono::milliseconds linger{5};
  int max_in_flight = 5;
  size_t max_buffered_bytes = 64 << 20;
  std::chrono::milliseconds delivery_timeout{30'000};
  // Between the attempts of a batch that failed UNAVAILABLE.
  Backoff retry_backoff;
  // The stream's partition count; 0 asks the broker. A stream the broker does not know yet is taken
  // to have one partition, the default policy it is auto-created with.
  int32_t partitions = 0;
  // Runs once per acknowledged batch.
  std::function<void(const AppendResult&)> on_batch;
  // Stamp batches so that resends are written once (above); false: at-least-once.
  bool idempotent = true;
  // A transactional producer's (TransactionalProducer, transactional_producer.h): the identity its
  // transactional id was given, and the id, which every batch carries. Such a producer asks for no
  // identity of its own and never moves to a new epoch itself: once a batch's outcome is unknown, it
  // fails every later batch until reset_identity() gives it the epoch that aborted the transaction.
  std::optional<ProducerIdentity> identity;
  std::string transactional_id;
};

struct Delivery {
  int32_t partition = 0;
  uint64_t offset = 0;
};

using DeliveryCallback = std::function<void(const Result<Delivery>&)>;

class Producer {
 public:
  static Result<std::unique_ptr<Producer>> open(Connection& connection, std::string stream,
                                                ProducerOptions options);
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  void send(Record record, DeliveryCallback done = {});
  // Sends what lingers and waits until every record sent before has its result.
  void flush();
  // flush() of several producers at once: each sends what lingers before any is waited for.
  static void flush_all(const std::vector<Producer*>& producers);
  // Gives up on every record still without a result, to stop in bounded time (a signal, a broker
  // that is down): queued records fail with `reason` at once; batches in flight are let go by closing
  // the connection (connection.h), and fail with `reason` unless their answer was already on its way;
  // a send() waiting for buffer space, and every later send(), fails its record the same way. flush()
  // then returns once the callbacks have run. Any thread; once.
  void abandon(const Error& reason);

  int32_t partitions() const { return partitions_; }
  // The broker-given identity batches are stamped with; nullopt without idempotence.
  std::optional<ProducerIdentity> identity() const;
  // Transactional: whether a batch's outcome is unknown, so that the transaction must be aborted with a
  // new epoch; and that epoch, given with nothing outstanding (after flush()), every partition's
  // sequences starting again at 0.
  bool needs_new_epoch() const;
  void reset_identity(ProducerIdentity identity);
  // Records that failed (delivery callback called with an error) since open, and the last error.
  uint64_t failed_records() const;
  std::optional<Error> last_error() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int32_t kUnkeyedLane = -1;

  struct Batch {
    uint64_t seq = 0;
    // Idempotence: the lane's count of records before this batch under the current epoch (its first
    // record's sequence, modulo 2^31), given when first sent; -1 until then.
    int64_t sequence = -1;
    std::string encoded;  // AppendRequest.records in wire format (append_encoding.h)
    size_t records = 0;
    std::vector<DeliveryCallback> callbacks;
    size_t bytes = 0;
    Clock::time_point created;
    int attempts = 0;
  };
  struct Lane {
    std::deque<Batch> queue;  // oldest first; only the back one may still grow
    bool back_open = false;
    int in_flight = 0;
    bool draining = false;  // a batch failed UNAVAILABLE: wait for the rest, then resend in order
    uint64_t socket = 0;    // the connection generation every in-flight batch went out on
    Clock::time_point retry_at;
    uint64_t next_seq = 0;
    int64_t next_sequence = 0;  // idempotence: the sequence the next batch sent takes
    // Idempotence: a batch of this sequence was refused, so the broker expects it next; once nothing is
    // in flight, the queued batches from it on are numbered again from it.
    std::optional<int64_t> renumber_from;
    // Idempotence: a batch was refused OUT_OF_ORDER_SEQUENCE (nothing written); once nothing is in
    // flight, a refusal before it explains it (renumber_from), or the producer takes the next epoch.
    bool out_of_order = false;
  };

  Producer(Connection& connection, std::string stream, ProducerOptions options, int32_t partitions,
           std::vector<int32_t> unkeyed, std::optional<ProducerIdentity> identity);
  static Result<ProducerIdentity> init_identity(Connection& connection,
                                                const std::optional<ProducerIdentity>& current,
                                                std::chrono::milliseconds budget);
  // The lane a record goes to (caller holds mutex_); `encoded_estimate` and `bytes` are its sizes.
  int32_t lane_for(const Record& record, size_t bytes, size_t encoded_estimate);
  // Whether the lane's open batch takes a record of these sizes (caller holds mutex_).
  bool fits(const Lane& lane, size_t bytes, size_t encoded_estimate) const;
  // Idempotence, on the sender thread with nothing in flight: the next epoch for every lane. Caller
  // holds `lock` (on mutex_), which this releases while it asks the broker.
  void bump_epoch(std::unique_lock<std::mutex>& lock);
  // Idempotence: a lane whose refused batch left a gap numbers its queued batches again (caller holds
  // mutex_, nothing of the lane in flight).
  static void renumber(Lane& lane);
  // Idempotence: whether a batch sent under the current epoch is in flight or waits to be resent, or a
  // lane waits to settle its sequences (caller holds mutex_).
  bool sent_under_epoch() const;
  void sender_loop();
  bool ready(const Lane& lane, const Batch& batch, Clock::time_point now) const;
  void dispatch(int32_t lane_id, Batch batch);
  // Puts a batch back in the lane's queue at its place by sequence number. Caller holds mutex_.
  void requeue(Lane& lane, Batch batch);
  // Takes the batch only to requeue it: otherwise its records stay where the sender wrote them
  // from, since an answer can arrive before the call that sent them has returned.
  void on_answer(int32_t lane_id, Batch& batch, const Status& status, const AppendResult& result);
  // A batch's final result: its callbacks run and its records stop counting as outstanding. The sender
  // is woken unless `wake_sender` says it waits for nothing this changes.
  void finish(Batch& batch, const Status& status, const AppendResult& result, bool wake_sender = true);

  Connection& connection_;
  const std::string stream_;
  const ProducerOptions options_;
  const int32_t partitions_;
  std::optional<ProducerIdentity> identity_;  // idempotence; written by the sender thread under mutex_
  // Idempotence: the partitions unkeyed batches go to in turn (StreamDescription::unkeyed_partitions),
  // and the index among them of the one unkeyed records fill now.
  const std::vector<int32_t> unkeyed_;
  size_t sticky_ = 0;
  bool bump_pending_ = false;         // a batch failed without a definite answer: take the next epoch

  mutable std::mutex mutex_;
  std::condition_variable cv_;          // the sender waits here
  std::condition_variable space_cv_;    // send() waits here for buffer space, abandon() for a dispatch
  std::condition_variable flushed_cv_;  // flush() waits here for outstanding_records_ to reach 0
  // While the sender waits on cv_, and until when: a record that cannot make a batch sendable before
  // then need not wake it (every wake of a thread is a system call and a switch on both sides).
  bool sender_sleeping_ = false;
  Clock::time_point sender_wake_;
  std::map<int32_t, Lane> lanes_;
  size_t buffered_bytes_ = 0;
  uint64_t outstanding_records_ = 0;
  // The broker's frame limit less room for the request around the records: batches stay under it,
  // whatever batch_bytes says. 0 until the connection has said Hello.
  size_t frame_budget_ = 0;
  uint64_t failed_records_ = 0;
  std::optional<Error> last_error_;
  int flushing_ = 0;
  bool stopping_ = false;
  bool dispatching_ = false;         // the sender is handing batches to the connection
  std::optional<Error> abandoned_;  // why, once abandon() was called
  std::thread sender_;
};

}  // namespace streamd::client
