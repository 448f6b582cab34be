// GroupCommit: the queue in front of one durable log, shared by PartitionLog and GroupOffsets.
//
// submit() queues an item; one flush at a time runs on the executor, taking every item queued so far
// (a group) and handing it to the owner's write function, which writes and syncs the group once and
// answers each item. What arrives meanwhile is the next group, posted behind whatever else the
// executor has queued, so a log that always has items waiting does not keep a storage thread from
// other logs. After fail() every queued and later item is answered with the refusal it was given,
// because what reached the disk is unknown until the log is reopened. close() waits for the flush in
// progress and refuses everything after it.
//
// An owner that must change the log with no flush running (PartitionLog rolls its active segment)
// takes the writer's role with hold() and hands it back with release().
//
// A write function that hands its group on (to the shared journal, journal.h) calls defer() before
// returning and resume() once the group is answered: the log's turn lasts until then, so no other flush
// or hold starts meanwhile. resume() may come before the write function has returned.
//
// Item is any movable type with a `done` member callable with a Status (the answer). The write
// function answers the items of its group itself; GroupCommit answers only the items it refuses.
//
// Thread-safety: every method may be called from any thread; write runs on the executor, one at a time.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "server/storage/executor.h"
#include "server/storage/status.h"

namespace streamd {

template <typename Item>
class GroupCommit {
 public:
  // Writes and syncs one group and answers every item in it; calls fail() first when it cannot.
  using Write = std::function<void(std::vector<Item>& group)>;

  // `closed` is the answer to items submitted after close().
  GroupCommit(Executor& executor, Status closed, Write write)
      : executor_(executor), closed_refusal_(std::move(closed)), write_(std::move(write)) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Queues `item` for the next group, or answers it at once when closed or failed.
  void submit(Item item) {
    std::unique_lock lock(mu_);
    Status refusal = closed_ ? closed_refusal_ : failure_;
    if (!refusal.ok()) {
      lock.unlock();
      item.done(std::move(refusal));
      return;
    }
    queue_.push_back(std::move(item));
    // A hold() waiting for the writer's role goes first; its release() posts this group.
    if (writing_ || holders_waiting_ > 0) return;
    writing_ = true;
    lock.unlock();
    post();
  }

  // Marks the log failed: from here on every item is answered with `refusal` (never ok); those queued
  // already are answered when the flush or hold in progress ends, after its own group. Call it before
  // answering the failed group, so that a caller told of the failure already sees failed().
  void fail(Status refusal) {
    std::lock_guard lock(mu_);
    if (failure_.ok()) failure_ = std::move(refusal);
  }

  bool failed() const {
    std::lock_guard lock(mu_);
    return !failure_.ok();
  }

  // Nothing queued, no flush queued or running, no one holding or waiting for the writer's role.
  bool idle() const {
    std::lock_guard lock(mu_);
    return !writing_ && holders_waiting_ == 0 && queue_.empty();
  }

  // Waits until no flush runs and no one holds the writer's role, then takes it: no flush starts until
  // release(). False, without taking it, when closed. It gets the role at the end of the flush in
  // progress even when more items wait (they go after it), so items that never stop arriving cannot
  // keep it out. It blocks its thread meanwhile: never call it on the executor the flushes run on.
  bool hold() {
    std::unique_lock lock(mu_);
    if (closed_) return false;
    ++holders_waiting_;
    idle_cv_.wait(lock, [this] { return !writing_; });
    --holders_waiting_;
    writing_ = true;
    return true;
  }
  // Hands the writer's role back after hold(); what was queued meanwhile is flushed.
  void release() { finish_turn(); }

  // From inside the write function: the group is not finished when it returns; resume() ends it.
  void defer() {
    std::lock_guard lock(mu_);
    deferred_ = true;
  }
  // Ends a deferred group's turn, once, after its items were answered. With `run_next_here`, the next
  // group (when items wait) is written on this thread now instead of being posted to the executor.
  void resume(bool run_next_here = false) {
    {
      std::lock_guard lock(mu_);
      if (in_write_) {  // the write function has not returned yet: flush() ends the turn
        resumed_early_ = true;
        return;
      }
    }
    finish_turn(run_next_here);
  }

  // Refuses later items and waits for the flush in progress. True the first time only.
  bool close() {
    std::unique_lock lock(mu_);
    const bool first = !closed_;
    closed_ = true;
    // With no hold waiting, not writing means nothing is queued (a release posts what queued behind it).
    idle_cv_.wait(lock, [this] { return !writing_ && holders_waiting_ == 0; });
    return first;
  }

 private:
  void post() {
    executor_.post([this] { flush(); });
  }

  void flush() {
    std::vector<Item> group;
    {
      std::lock_guard lock(mu_);
      group.swap(queue_);
      in_write_ = true;
    }
    if (!group.empty()) write_(group);
    {
      std::lock_guard lock(mu_);
      in_write_ = false;
      const bool deferred = std::exchange(deferred_, false);
      if (deferred && !std::exchange(resumed_early_, false)) return;
    }
    finish_turn();
  }

  // Ends a flush or a hold: the next group goes behind the executor's other work (or, `here`, is
  // written on this thread), or the log is idle.
  void finish_turn(bool here = false) {
    std::vector<Item> refused;
    Status refusal;
    {
      std::lock_guard lock(mu_);
      if (!failure_.ok()) {
        refused.swap(queue_);
        refusal = failure_;
      }
    }
    // Answered before the log goes idle, so close() returns only once every item has its answer.
    // Nothing queues meanwhile: a failed log refuses at submit.
    for (Item& item : refused) item.done(refusal);
    {
      std::lock_guard lock(mu_);
      // Between two groups the writer's role goes to a waiting hold(), whose release() posts the next.
      if (queue_.empty() || holders_waiting_ > 0) {
        writing_ = false;
        idle_cv_.notify_all();
        return;
      }
    }
    if (here) {
      flush();
    } else {
      post();
    }
  }

  Executor& executor_;
  const Status closed_refusal_;
  const Write write_;

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<Item> queue_;
  bool writing_ = false;  // a flush is queued or running, or someone holds the writer's role
  int holders_waiting_ = 0;  // hold() calls waiting for the role
  bool closed_ = false;
  bool in_write_ = false;       // the write function runs
  bool deferred_ = false;       // it called defer()
  bool resumed_early_ = false;  // resume() came while it still ran
  Status failure_;
};

}  // namespace streamd
