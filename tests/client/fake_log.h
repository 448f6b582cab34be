// FakeLog: an in-memory model of the broker's streams for the client's unit tests, served through
// FakeBroker. It implements what the Producer, Consumer and Subscriber use — create, describe,
// append (placement by the client's partition_of, round-robin for unkeyed batches, or the partition an
// idempotent batch names, checked by the broker's own sequence rules), init_producer, read (never
// waits), bounds, offset_at, commit and committed — with the broker's error codes. Hooks may drop
// the connection instead of answering an append, or refuse it, to test recovery. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/error.h"
#include "fake_broker.h"
#include "server/storage/producer_state.h"
#include "streamd.pb.h"

namespace streamd::client::testing {

class FakeLog {
 public:
  explicit FakeLog(uint64_t max_frame_bytes = 1 << 20)
      : broker_([this](const v1::Request& r, v1::Response* a) { return handle(r, a); }, max_frame_bytes) {}

  uint16_t port() const { return broker_.port(); }
  FakeBroker& broker() { return broker_; }
  void create(const std::string& stream, int32_t partitions);
  // The partitions a describe marks in_rotation (this broker's share of unkeyed appends when several
  // share a database); none by default, as a broker that predates the field answers.
  void set_rotation(const std::string& stream, std::vector<int32_t> partitions);
  // Records of one partition, in offset order.
  std::vector<v1::Record> records(const std::string& stream, int32_t partition);
  uint64_t appends() const;
  // Called before each append is applied; returning true drops every connection instead (the append
  // is applied first when `apply_before_drop`, as when a broker dies after its sync).
  void on_append(std::function<bool(uint64_t append_number)> hook, bool apply_before_drop) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
    apply_before_drop_ = apply_before_drop;
  }
  // Called before each append is applied (after on_append's hook): an error refuses it with that code,
  // writing nothing, as the broker refuses a batch before its partition sees it.
  void refuse_append(std::function<std::optional<ErrorCode>(uint64_t append_number)> hook) {
    std::lock_guard lock(mutex_);
    refuse_ = std::move(hook);
  }
  // The InitProducer requests answered, and how many named a current identity (an epoch bump).
  std::pair<int, int> init_producers() const {
    std::lock_guard lock(mutex_);
    return {inits_, bumps_};
  }

 private:
  struct Stream {
    std::vector<std::vector<v1::Entry>> partitions;
    std::vector<std::unique_ptr<ProducerState>> producers;  // per partition
    size_t rotation = 0;
    std::vector<int32_t> in_rotation;
    std::map<std::pair<std::string, int32_t>, uint64_t> committed;
  };
  bool handle(const v1::Request& request, v1::Response* response);
  void append(Stream& stream, const v1::AppendRequest& request, v1::Response* response);

  mutable std::mutex mutex_;
  std::map<std::string, Stream> streams_;
  uint64_t appends_ = 0;
  int64_t clock_us_ = 1'000'000;
  std::function<bool(uint64_t)> hook_;
  bool apply_before_drop_ = false;
  std::function<std::optional<ErrorCode>(uint64_t)> refuse_;
  int64_t next_producer_id_ = 100;
  int inits_ = 0;
  int bumps_ = 0;
  FakeBroker broker_;
};

}  // namespace streamd::client::testing
