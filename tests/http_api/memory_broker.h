// A broker over the memory engine for the API's in-process tests, with a manual clock (so append
// instants are chosen by the test) and a scheduler on a thread of its own, plus helpers that wait
// for the asynchronous operations.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/broker/broker.h"
#include "server/broker/memory/memory_engine.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"

namespace streamd::testing {

// Runs each call on its own thread after its delay; cancel stops one that has not run.
class ThreadScheduler final : public Scheduler {
 public:
  ~ThreadScheduler() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::function<void()> schedule_after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    auto cancelled = std::make_shared<bool>(false);
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, delay, fn = std::move(fn), cancelled] {
      std::unique_lock wait_lock(mu_);
      cv_.wait_for(wait_lock, delay, [&] { return stopping_ || *cancelled; });
      if (stopping_ || *cancelled) return;
      wait_lock.unlock();
      fn();
    });
    return [this, cancelled] {
      std::lock_guard cancel_lock(mu_);
      *cancelled = true;
      cv_.notify_all();
    };
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct MemoryBroker {
  MemoryBroker() {
    BrokerOptions options;
    options.retention_check_period = std::chrono::milliseconds(0);
    auto opened = Broker::open(std::make_unique<MemoryEngine>(1ull << 30, pool, clock), options, pool, clock, scheduler);
    REQUIRE(opened.ok());
    broker = std::move(*opened);
  }
  ~MemoryBroker() { broker->close(); }

  void create(const std::string& name, int32_t partitions) {
    Policy p;
    p.partitions = partitions;
    REQUIRE(broker->create_stream(name, p, false).ok());
  }

  AppendResult append(const std::string& stream, const std::string& key, const std::string& payload,
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
    std::promise<Result<AppendResult>> done;
    RecordInput in{key, payload, {}};
    for (const auto& [n, v] : headers) in.headers.push_back(HeaderView{n, v});
    broker->append(stream, {in}, [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
    auto r = done.get_future().get();
    REQUIRE(r.ok());
    return *r;
  }

  AppendResult append_to(const std::string& stream, int32_t partition, const std::string& payload) {
    std::promise<Result<AppendResult>> done;
    broker->append_to_partition(stream, PartitionId(partition), false, {RecordInput{{}, payload, {}}},
                                [&](Result<AppendResult> r) { done.set_value(std::move(r)); });
    auto r = done.get_future().get();
    REQUIRE(r.ok());
    return *r;
  }

  ThreadPool pool{2};
  ManualClock clock;
  ThreadScheduler scheduler;
  std::unique_ptr<Broker> broker;
};

}  // namespace streamd::testing
