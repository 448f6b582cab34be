#include "client/pending_requests.h"

#include "streamd.pb.h"

namespace streamd::client {

void PendingRequest::fail(const Error& error) {
  if (raw) {
    raw(Status(error), {});
  } else {
    v1::Response empty;
    done(Status(error), empty);
  }
}

void PendingRequests::add(uint64_t id, PendingRequest request) {
  deadlines_.emplace(request.deadline, id);
  by_id_.emplace(id, std::move(request));
}

std::optional<PendingRequest> PendingRequests::take(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  deadlines_.erase({it->second.deadline, id});
  PendingRequest request = std::move(it->second);
  by_id_.erase(it);
  return request;
}

std::vector<PendingRequest> PendingRequests::take_expired(Clock::time_point now) {
  std::vector<PendingRequest> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    auto it = by_id_.find(deadlines_.begin()->second);
    expired.push_back(std::move(it->second));
    by_id_.erase(it);
    deadlines_.erase(deadlines_.begin());
  }
  return expired;
}

std::vector<PendingRequest> PendingRequests::take_all() {
  std::vector<PendingRequest> all;
  all.reserve(by_id_.size());
  for (auto& [id, request] : by_id_) all.push_back(std::move(request));
  by_id_.clear();
  deadlines_.clear();
  return all;
}

}  // namespace streamd::client
