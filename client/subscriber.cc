#include "client/subscriber.h"

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "client/backoff.h"
#include "client/consumer.h"

namespace streamd::client {
namespace {

Error misconfigured(const std::string& field, std::string message) {
  return Error(ErrorCode::kSubscriberMisconfigured, std::move(message), {{"field", field}});
}

bool handled(const std::function<bool(const Entry&)>& handler, const Entry& entry) {
  try {
    return handler(entry);
  } catch (...) {
    return false;
  }
}

}  // namespace

Result<std::unique_ptr<Subscriber>> Subscriber::create(Connection& connection, std::string stream,
                                                       SubscriberOptions options) {
  if (options.group.empty()) return misconfigured("group", "a subscriber needs a consumer group");
  if (!options.handler) return misconfigured("handler", "a subscriber needs a handler");
  if (!options.handler_idempotent) {
    return misconfigured("handler_idempotent",
                         "delivery is at-least-once: the handler must be declared idempotent");
  }
  if (!options.start_when_unknown) {
    return misconfigured("start_when_unknown",
                         "say where to start on a partition the group has never committed on");
  }
  if (options.max_records <= 0) return misconfigured("max_records", "max_records must be positive");
  return std::unique_ptr<Subscriber>(new Subscriber(connection, std::move(stream), std::move(options)));
}

namespace {

using Clock = std::chrono::steady_clock;

// The partitions parked on a record the handler failed on: each waits out its backoff, then is
// resumed at that record, never past it.
class Parking {
 public:
  explicit Parking(Backoff backoff) : backoff_(backoff) {}

  // Resumes the partitions whose wait is over; returns when the next parked one is due (max if none).
  Clock::time_point resume_due(Consumer& consumer, Clock::time_point now) {
    Clock::time_point next = Clock::time_point::max();
    for (auto& [partition, park] : parked_) {
      if (consumer.is_paused(partition) && now >= park.retry_at) consumer.resume(partition);
      if (consumer.is_paused(partition)) next = std::min(next, park.retry_at);
    }
    return next;
  }
  // The record was handled: a partition parked on it is free again.
  void handled(const Entry& entry) {
    auto park = parked_.find(entry.partition);
    if (park != parked_.end() && park->second.offset == entry.offset) parked_.erase(park);
  }
  // The handler failed on `entry`: its partition goes back to it and waits. Returns the failure count.
  int park(Consumer& consumer, const Entry& entry) {
    Parked& park = parked_[entry.partition];
    park.failures = park.offset == entry.offset ? park.failures + 1 : 1;
    park.offset = entry.offset;
    park.retry_at = Clock::now() + backoff_.delay(park.failures);
    consumer.seek(entry.partition, entry.offset);
    consumer.pause(entry.partition);
    return park.failures;
  }

 private:
  struct Parked {
    uint64_t offset = 0;
    int failures = 0;
    Clock::time_point retry_at;
  };
  const Backoff backoff_;
  std::map<int32_t, Parked> parked_;
};

// How long a poll may wait: a parked partition's retry must not wait behind a long poll on the others.
std::chrono::milliseconds poll_wait(std::chrono::milliseconds wait, Clock::time_point next_retry,
                                    Clock::time_point now) {
  if (next_retry == Clock::time_point::max()) return wait;
  return std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_retry - now),
                    std::chrono::milliseconds(0), wait);
}

// Stopped mid-batch at `from`: each partition resumes (and commits) at its first record not handled.
void rewind_unhandled(Consumer& consumer, const std::vector<Entry>& entries, size_t from) {
  std::map<int32_t, uint64_t> first_unhandled;
  for (size_t i = from; i < entries.size(); ++i) first_unhandled.emplace(entries[i].partition, entries[i].offset);
  for (const auto& [partition, offset] : first_unhandled) {
    if (!consumer.is_paused(partition)) consumer.seek(partition, offset);
  }
}

}  // namespace

Result<std::unique_ptr<Consumer>> Subscriber::open_consumer() {
  ConsumerOptions consumer_options;
  consumer_options.partitions = options_.partitions;
  consumer_options.start = *options_.start_when_unknown;
  consumer_options.group = options_.group;
  consumer_options.max_records = options_.max_records;
  consumer_options.wait = options_.wait;
  consumer_options.retry_for = options_.wait;
  while (!stopping_) {
    auto opened = Consumer::open(connection_, stream_, consumer_options);
    if (opened.ok() || !opened.error().is(ErrorCode::kUnavailable)) return opened;
  }
  return std::unique_ptr<Consumer>();
}

Status Subscriber::run() {
  auto opened = open_consumer();
  if (!opened.ok()) return opened.error();
  if (!*opened) return Status();  // stopped before the consumer opened
  Consumer& consumer = **opened;
  Parking parking(Backoff{options_.retry_initial, options_.retry_max});
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    const Clock::time_point next_retry = parking.resume_due(consumer, now);
    const bool all_paused = std::all_of(consumer.partitions().begin(), consumer.partitions().end(),
                                        [&](int32_t p) { return consumer.is_paused(p); });
    if (all_paused) {
      std::this_thread::sleep_until(std::min(next_retry, now + std::chrono::milliseconds(50)));
      continue;
    }
    auto entries = consumer.poll(poll_wait(options_.wait, next_retry, now));
    if (!entries.ok()) {
      if (entries.error().is(ErrorCode::kUnavailable)) continue;
      return entries.error();
    }
    size_t i = 0;
    for (; i < entries->size() && !stopping_; ++i) {
      const Entry& entry = (*entries)[i];
      if (consumer.is_paused(entry.partition)) continue;  // parked earlier in this batch
      if (handled(options_.handler, entry)) {
        parking.handled(entry);
        continue;
      }
      const int failures = parking.park(consumer, entry);
      if (options_.on_park) options_.on_park(entry.partition, entry.offset, failures);
    }
    rewind_unhandled(consumer, *entries, i);
    if (Status s = consumer.commit(); !s.ok() && !s.error().is(ErrorCode::kUnavailable)) return s;
  }
  Status last = consumer.commit();
  return last.ok() || last.error().is(ErrorCode::kUnavailable) ? Status() : last;
}

}  // namespace streamd::client
