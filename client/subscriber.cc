#include "client/subscriber.h"

#include <algorithm>
#include <map>
#include <thread>

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

Status Subscriber::run() {
  using Clock = std::chrono::steady_clock;
  ConsumerOptions consumer_options;
  consumer_options.partitions = options_.partitions;
  consumer_options.start = *options_.start_when_unknown;
  consumer_options.group = options_.group;
  consumer_options.max_records = options_.max_records;
  consumer_options.wait = options_.wait;
  consumer_options.retry_for = options_.wait;
  std::unique_ptr<Consumer> consumer;
  while (!consumer) {
    if (stopping_) return Status();
    auto opened = Consumer::open(connection_, stream_, consumer_options);
    if (opened.ok()) {
      consumer = std::move(*opened);
    } else if (!opened.error().is(ErrorCode::kUnavailable)) {
      return opened.error();
    }
  }

  struct Parked {
    uint64_t offset;
    int failures;
    Clock::time_point retry_at;
  };
  std::map<int32_t, Parked> parked;

  while (!stopping_) {
    Clock::time_point now = Clock::now();
    Clock::time_point next_retry = Clock::time_point::max();
    for (auto& [partition, park] : parked) {
      if (consumer->is_paused(partition) && now >= park.retry_at) consumer->resume(partition);
      if (consumer->is_paused(partition)) next_retry = std::min(next_retry, park.retry_at);
    }
    const bool all_paused = std::all_of(consumer->partitions().begin(), consumer->partitions().end(),
                                        [&](int32_t p) { return consumer->is_paused(p); });
    if (all_paused) {
      std::this_thread::sleep_until(std::min(next_retry, now + std::chrono::milliseconds(50)));
      continue;
    }
    // A parked partition's retry must not wait behind a long poll on the others.
    auto wait = options_.wait;
    if (next_retry != Clock::time_point::max()) {
      wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_retry - now),
                        std::chrono::milliseconds(0), wait);
    }
    auto entries = consumer->poll(wait);
    if (!entries.ok()) {
      if (entries.error().is(ErrorCode::kUnavailable)) continue;
      return entries.error();
    }
    size_t i = 0;
    for (; i < entries->size() && !stopping_; ++i) {
      const Entry& entry = (*entries)[i];
      if (consumer->is_paused(entry.partition)) continue;  // parked earlier in this batch
      if (handled(options_.handler, entry)) {
        auto park = parked.find(entry.partition);
        if (park != parked.end() && park->second.offset == entry.offset) parked.erase(park);
        continue;
      }
      Parked& park = parked[entry.partition];
      park.failures = park.offset == entry.offset ? park.failures + 1 : 1;
      park.offset = entry.offset;
      auto backoff = options_.retry_initial * (1ll << std::min(park.failures - 1, 20));
      park.retry_at = Clock::now() + std::min<std::chrono::milliseconds>(backoff, options_.retry_max);
      consumer->seek(entry.partition, entry.offset);
      consumer->pause(entry.partition);
      if (options_.on_park) options_.on_park(entry.partition, entry.offset, park.failures);
    }
    // Stopped mid-batch: each partition resumes (and commits) at its first record not handled.
    std::map<int32_t, uint64_t> first_unhandled;
    for (; i < entries->size(); ++i) first_unhandled.emplace((*entries)[i].partition, (*entries)[i].offset);
    for (const auto& [partition, offset] : first_unhandled) {
      if (!consumer->is_paused(partition)) consumer->seek(partition, offset);
    }
    if (Status s = consumer->commit(); !s.ok() && !s.error().is(ErrorCode::kUnavailable)) return s;
  }
  Status last = consumer->commit();
  return last.ok() || last.error().is(ErrorCode::kUnavailable) ? Status() : last;
}

}  // namespace streamd::client
