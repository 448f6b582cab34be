// The one table of the Kafka APIs this listener implements: key, name, the version range, where
// flexible versions start, and the handler. Request-header parsing, the ApiVersions answer and the
// refusal of everything else all read it, so what is advertised is exactly what is implemented
// (docs/KAFKA.md §APIs lists the same rows with the reasons for each range).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace streamd::kafka {

enum class ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kDeleteRecords = 21,
  kInitProducerId = 22,
  kAddPartitionsToTxn = 24,
  kAddOffsetsToTxn = 25,
  kEndTxn = 26,
  kTxnOffsetCommit = 28,
  kDescribeAcls = 29,
  kCreateAcls = 30,
  kDeleteAcls = 31,
  kDescribeConfigs = 32,
  kAlterConfigs = 33,
  kDescribeLogDirs = 35,
  kSaslAuthenticate = 36,
  kCreatePartitions = 37,
  kDeleteGroups = 42,
  kElectLeaders = 43,
  kIncrementalAlterConfigs = 44,
  kOffsetDelete = 47,
  kDescribeCluster = 60,
  kDescribeProducers = 61,
};

class Request;
// Decodes the request body and starts answering it; false when the body does not parse (the
// connection then closes). Runs on the network loop.
using Handler = bool (*)(Request& request);

struct ApiInfo {
  ApiKey key;
  std::string_view name;  // the metric label: "produce", "fetch", …
  int16_t min_version;
  int16_t max_version;
  int16_t flexible_from;  // first flexible version; above max_version when none is supported
  Handler handler;
  bool sasl = false;  // offered (and advertised) only where kafka.sasl_mechanisms is set

  bool supports(int16_t version) const { return version >= min_version && version <= max_version; }
  bool flexible(int16_t version) const { return version >= flexible_from; }
};

// Every row, in api-key order.
std::span<const ApiInfo> api_table();
// The row of `key`, or nullptr for an API this listener does not implement.
const ApiInfo* find_api(int16_t key);

}  // namespace streamd::kafka
