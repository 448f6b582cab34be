// The client's value types: records, entries, policies and the answers of the broker's operations
// (docs/SEMANTICS.md §1–§3), free of protobuf so that streamctl and applications compile without the
// generated headers. Plain values, safe to copy between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace streamd::client {

struct Header {
  std::string name;
  std::string value;  // bytes
  bool operator==(const Header&) const = default;
};

struct Record {
  std::string key;      // bytes; empty means unkeyed
  std::string payload;  // bytes; empty under a key is a tombstone
  std::vector<Header> headers;
  bool operator==(const Record&) const = default;
};

struct Entry {
  int32_t partition = 0;
  uint64_t offset = 0;
  int64_t appended_at_us = 0;  // broker clock, microseconds since the Unix epoch
  Record record;
};

// Which instant Kafka clients see as a record's timestamp (docs/SEMANTICS.md §3).
enum class TimestampType {
  kDefault = 0,  // CreateTime
  kCreateTime = 1,
  kLogAppendTime = 2,
};

// docs/SEMANTICS.md §3; zero fields mean the documented defaults.
struct Policy {
  int32_t partitions = 0;
  int64_t max_record_bytes = 0;
  std::chrono::milliseconds retain_for{0};
  int64_t retain_bytes = 0;
  int64_t max_bytes = 0;
  std::chrono::milliseconds block_timeout{0};
  int64_t segment_bytes = 0;
  std::chrono::milliseconds compact_after{0};
  TimestampType timestamp_type = TimestampType::kDefault;
  bool operator==(const Policy&) const = default;
};

// A change of a live stream's policy (Admin::alter_stream; docs/SEMANTICS.md §3, "Changing a policy"):
// each field given replaces the stream's, the others stay; a zero means the field's default, as at
// creation. `partitions` may only repeat the stream's count.
struct PolicyChange {
  std::optional<int32_t> partitions;
  std::optional<int64_t> max_record_bytes;
  std::optional<std::chrono::milliseconds> retain_for;
  std::optional<int64_t> retain_bytes;
  std::optional<int64_t> max_bytes;
  std::optional<std::chrono::milliseconds> block_timeout;
  std::optional<int64_t> segment_bytes;
  std::optional<std::chrono::milliseconds> compact_after;
  std::optional<TimestampType> timestamp_type;
  bool operator==(const PolicyChange&) const = default;
};

struct StreamSummary {
  std::string name;
  int32_t partitions = 0;
};

struct PartitionInfo {
  int32_t partition = 0;
  uint64_t first = 0;
  uint64_t next = 0;
  uint64_t bytes = 0;
  uint32_t segments = 0;
  // The answering broker's rotation of unkeyed appends takes it (proto/streamd.proto).
  bool in_rotation = false;
};

struct StreamDescription {
  std::string name;
  Policy policy;
  std::vector<PartitionInfo> partitions;
  int64_t created_at_us = 0;

  // Where a producer that chooses partitions itself sends its unkeyed batches: the partitions the
  // answering broker's rotation takes, so that brokers sharing a database each write their own
  // (docs/SCALING.md §"Unkeyed appends across brokers"); every partition when none is marked.
  std::vector<int32_t> unkeyed_partitions() const {
    std::vector<int32_t> out;
    for (const PartitionInfo& p : partitions) {
      if (p.in_rotation) out.push_back(p.partition);
    }
    if (out.empty()) {
      for (int32_t p = 0; p < policy.partitions; ++p) out.push_back(p);
    }
    return out;
  }
};

struct CreateResult {
  std::string name;
  Policy policy;  // normalized by the broker
  bool created = false;
};

// What a read sees of transactions (docs/TRANSACTIONS.md): committed records only, up to the last stable
// offset, or everything to the end, aborted records included. Neither returns a transaction marker.
enum class Isolation { kReadCommitted, kReadUncommitted };

struct Bounds {
  int32_t partition = 0;
  uint64_t first = 0;
  uint64_t next = 0;
  uint64_t last_stable = 0;  // where read_committed reads stop (docs/TRANSACTIONS.md)
};

struct AppendResult {
  int32_t partition = 0;
  uint64_t first = 0;
  uint64_t last = 0;
};

struct GroupPartition {
  std::string group;
  int32_t partition = 0;
  uint64_t committed = 0;
  uint64_t next = 0;
  uint64_t lag = 0;
};

struct CompactResult {
  int32_t partition = 0;
  int64_t scanned = 0;
  int64_t kept = 0;
  int64_t dropped = 0;
};

// An idempotent producer's identity, from the broker (Admin::init_producer).
struct ProducerIdentity {
  int64_t id = -1;
  int32_t epoch = 0;
  bool operator==(const ProducerIdentity&) const = default;
};

// What the broker's transaction coordinator holds of a transactional id (TxnAdmin).
struct TxnPartitionRef {
  std::string stream;
  int32_t partition = 0;
};
struct TxnStagedOffset {
  std::string group;
  std::string stream;
  int32_t partition = 0;
  uint64_t next = 0;
};
struct TransactionInfo {
  std::string transactional_id;
  ProducerIdentity producer;
  std::string state;  // Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort
  int32_t timeout_ms = 0;
  int64_t started_at_us = 0;  // when the current (or last) transaction began
  // While a transaction is open or being ended:
  std::vector<TxnPartitionRef> partitions;
  std::vector<std::string> groups;
  std::vector<TxnStagedOffset> offsets;
};

struct Health {
  std::string status;
  std::string version;
  uint64_t uptime_s = 0;
  uint32_t streams = 0;
};

// Where a reader starts on a partition: the first retained offset, the next offset (only records
// appended from now on), an explicit offset, or the first record appended at or after a time.
struct StartPosition {
  enum class Kind { kEarliest, kLatest, kOffset, kTime };
  Kind kind = Kind::kEarliest;
  uint64_t offset = 0;  // kOffset
  int64_t time_us = 0;  // kTime, microseconds since the Unix epoch

  static StartPosition earliest() { return {Kind::kEarliest, 0, 0}; }
  static StartPosition latest() { return {Kind::kLatest, 0, 0}; }
  static StartPosition at_offset(uint64_t offset) { return {Kind::kOffset, offset, 0}; }
  static StartPosition at_time(int64_t time_us) { return {Kind::kTime, 0, time_us}; }
};

}  // namespace streamd::client
