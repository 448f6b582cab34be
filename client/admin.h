// Admin: every operation of docs/SEMANTICS.md §2 as one synchronous call each, over a shared Connection. The
// one-batch append() is here too, for callers that want one request per batch (the Producer batches
// and pipelines instead). Errors are the broker's, or UNAVAILABLE when it cannot be reached.
//
// Thread-safe: an Admin holds only a reference to its Connection (which must outlive it) and a
// timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/error.h"
#include "client/types.h"

namespace streamd::client {

class Admin {
 public:
  // A zero timeout means the connection's request_timeout.
  explicit Admin(Connection& connection, std::chrono::milliseconds timeout = {})
      : connection_(connection), timeout_(timeout) {}

  Result<CreateResult> create_stream(const std::string& name, const Policy& policy,
                                     bool if_not_exists = false);
  // Changes the stream's policy as `change` says and returns the policy now in force (normalized); with
  // validate_only, the policy the change would make, changing nothing. STREAM_MISCONFIGURED naming
  // the field, STREAM_NOT_FOUND.
  Result<Policy> alter_stream(const std::string& name, const PolicyChange& change, bool validate_only = false);
  // Whether it was deleted (false only with if_exists and an absent stream).
  Result<bool> delete_stream(const std::string& name, bool if_exists = false);
  Result<std::vector<StreamSummary>> list_streams();
  Result<StreamDescription> describe_stream(const std::string& name);

  Result<AppendResult> append(const std::string& stream, const std::vector<Record>& records);
  Result<Bounds> bounds(const std::string& stream, int32_t partition);
  // The partition's last retained entry; nullopt when it holds none.
  Result<std::optional<Entry>> peek(const std::string& stream, int32_t partition);

  Status commit(const std::string& stream, const std::string& group, int32_t partition, uint64_t next);
  // UNKNOWN_GROUP when the group never committed on that partition.
  Result<uint64_t> committed(const std::string& stream, const std::string& group, int32_t partition);
  Result<std::vector<GroupPartition>> list_groups(const std::string& stream);

  Result<uint64_t> offset_at(const std::string& stream, int32_t partition, int64_t time_us);
  // The partition's first offset afterwards.
  Result<uint64_t> trim(const std::string& stream, int32_t partition, uint64_t before);
  Result<CompactResult> compact(const std::string& stream, int32_t partition);
  Result<Health> health();
  // A new idempotent producer identity, or `current`'s next epoch (docs/PROTOCOL.md §InitProducer).
  Result<ProducerIdentity> init_producer(const std::optional<ProducerIdentity>& current = std::nullopt);

 private:
  Connection& connection_;
  std::chrono::milliseconds timeout_;
};

}  // namespace streamd::client
