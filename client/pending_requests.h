// PendingRequests: a connection's table of requests sent and not yet answered, by correlation id,
// with their deadlines in order so that the expired ones are found without a scan.
//
// Not thread-safe: the Connection that owns it guards it with its own lock, because registering a
// request must happen atomically with checking which socket it goes out on (connection.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "client/error.h"

namespace streamd::v1 {
class Response;
}  // namespace streamd::v1

namespace streamd::client {

// One request's completion: exactly one of `done` (given the parsed Response) and `raw` (given the
// bytes of the answer's body) is set.
struct PendingRequest {
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void(const Status& status, v1::Response& response)>;
  using RawCallback = std::function<void(const Status& status, std::string_view body)>;

  Clock::time_point deadline;
  Callback done;
  RawCallback raw;

  // Completes the request with `error` (and an empty answer).
  void fail(const Error& error);
};

class PendingRequests {
 public:
  using Clock = PendingRequest::Clock;

  // A fresh correlation id: ids are never reused on a connection, across its sockets either, so a
  // late answer can never complete a newer request.
  uint64_t next_id() { return next_id_++; }

  void add(uint64_t id, PendingRequest request);
  // The request `id` answers, removed; none when it is unknown (already failed or expired).
  std::optional<PendingRequest> take(uint64_t id);
  // Every request whose deadline is at or before `now`, removed, earliest first.
  std::vector<PendingRequest> take_expired(Clock::time_point now);
  // Every request, removed, in id order (the order they were sent in).
  std::vector<PendingRequest> take_all();

 private:
  uint64_t next_id_ = 1;
  std::map<uint64_t, PendingRequest> by_id_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
};

}  // namespace streamd::client
