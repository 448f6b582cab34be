#include "server/broker/engine_budget.h"

#include "server/broker/backpressure.h"

namespace streamd {

void EngineBudget::enlist(const std::shared_ptr<Backpressure>& stream) {
  std::lock_guard lock(mu_);
  std::erase_if(streams_, [](const std::weak_ptr<Backpressure>& s) { return s.expired(); });
  streams_.push_back(stream);
}

void EngineBudget::room_freed() {
  std::vector<std::shared_ptr<Backpressure>> streams;
  {
    std::lock_guard lock(mu_);
    for (const auto& weak : streams_) {
      if (auto s = weak.lock()) streams.push_back(std::move(s));
    }
  }
  for (const auto& s : streams) s->room_freed();
}

}  // namespace streamd
