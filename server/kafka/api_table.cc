#include "server/kafka/api_table.h"

#include <array>

#include "server/kafka/handlers.h"

namespace streamd::kafka {
namespace {

constexpr int16_t kNotFlexible = 0x7fff;

// docs/KAFKA.md §APIs says why each range starts and stops where it does. Flexible versions
// (KIP-482) are offered where a client sends them and a handler speaks them through the codec's
// flexible mode (codec.h); the rest stop below their first flexible version.
// The size follows from the rows: a fixed size larger than them would add rows of zeros (Produce
// 0..0, no handler), which clients read as the broker's Produce range.
constexpr auto kApis = std::to_array<ApiInfo>({
    {ApiKey::kProduce, "produce", 0, 7, kNotFlexible, handle_produce},
    {ApiKey::kFetch, "fetch", 4, 11, kNotFlexible, handle_fetch},
    {ApiKey::kListOffsets, "list_offsets", 0, 3, kNotFlexible, handle_list_offsets},
    {ApiKey::kMetadata, "metadata", 0, 7, kNotFlexible, handle_metadata},
    {ApiKey::kOffsetCommit, "offset_commit", 0, 7, kNotFlexible, handle_offset_commit},
    {ApiKey::kOffsetFetch, "offset_fetch", 0, 7, 6, handle_offset_fetch},
    {ApiKey::kFindCoordinator, "find_coordinator", 0, 2, kNotFlexible, handle_find_coordinator},
    {ApiKey::kJoinGroup, "join_group", 0, 5, kNotFlexible, handle_join_group},
    {ApiKey::kHeartbeat, "heartbeat", 0, 3, kNotFlexible, handle_heartbeat},
    {ApiKey::kLeaveGroup, "leave_group", 0, 3, kNotFlexible, handle_leave_group},
    {ApiKey::kSyncGroup, "sync_group", 0, 3, kNotFlexible, handle_sync_group},
    {ApiKey::kDescribeGroups, "describe_groups", 0, 5, 5, handle_describe_groups},
    {ApiKey::kListGroups, "list_groups", 0, 4, 3, handle_list_groups},
    {ApiKey::kSaslHandshake, "sasl_handshake", 0, 1, kNotFlexible, handle_sasl_handshake, true},
    {ApiKey::kApiVersions, "api_versions", 0, 3, 3, handle_api_versions},
    {ApiKey::kCreateTopics, "create_topics", 0, 4, kNotFlexible, handle_create_topics},
    {ApiKey::kDeleteTopics, "delete_topics", 0, 3, kNotFlexible, handle_delete_topics},
    {ApiKey::kDeleteRecords, "delete_records", 0, 1, kNotFlexible, handle_delete_records},
    {ApiKey::kInitProducerId, "init_producer_id", 0, 4, 2, handle_init_producer_id},
    {ApiKey::kAddPartitionsToTxn, "add_partitions_to_txn", 0, 2, kNotFlexible, handle_add_partitions_to_txn},
    {ApiKey::kAddOffsetsToTxn, "add_offsets_to_txn", 0, 2, kNotFlexible, handle_add_offsets_to_txn},
    {ApiKey::kEndTxn, "end_txn", 0, 2, kNotFlexible, handle_end_txn},
    {ApiKey::kTxnOffsetCommit, "txn_offset_commit", 0, 3, 3, handle_txn_offset_commit},
    {ApiKey::kDescribeAcls, "describe_acls", 0, 3, 2, handle_describe_acls},
    {ApiKey::kCreateAcls, "create_acls", 0, 3, 2, handle_create_acls},
    {ApiKey::kDeleteAcls, "delete_acls", 0, 3, 2, handle_delete_acls},
    {ApiKey::kDescribeConfigs, "describe_configs", 0, 2, kNotFlexible, handle_describe_configs},
    {ApiKey::kAlterConfigs, "alter_configs", 0, 2, 2, handle_alter_configs},
    {ApiKey::kDescribeLogDirs, "describe_log_dirs", 0, 4, 2, handle_describe_log_dirs},
    {ApiKey::kSaslAuthenticate, "sasl_authenticate", 0, 1, kNotFlexible, handle_sasl_authenticate, true},
    {ApiKey::kCreatePartitions, "create_partitions", 0, 3, 2, handle_create_partitions},
    {ApiKey::kDeleteGroups, "delete_groups", 0, 2, 2, handle_delete_groups},
    {ApiKey::kElectLeaders, "elect_leaders", 0, 2, 2, handle_elect_leaders},
    {ApiKey::kIncrementalAlterConfigs, "incremental_alter_configs", 0, 1, 1, handle_incremental_alter_configs},
    {ApiKey::kOffsetDelete, "offset_delete", 0, 0, kNotFlexible, handle_offset_delete},
    {ApiKey::kDescribeCluster, "describe_cluster", 0, 1, 0, handle_describe_cluster},
    {ApiKey::kDescribeProducers, "describe_producers", 0, 0, 0, handle_describe_producers},
});

}  // namespace

std::span<const ApiInfo> api_table() {
  return kApis;
}

const ApiInfo* find_api(int16_t key) {
  for (const ApiInfo& api : kApis) {
    if (static_cast<int16_t>(api.key) == key) return &api;
  }
  return nullptr;
}

}  // namespace streamd::kafka
