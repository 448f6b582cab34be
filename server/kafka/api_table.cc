#include "server/kafka/api_table.h"

#include <array>

#include "server/kafka/handlers.h"

namespace streamd::kafka {
namespace {

constexpr int16_t kNotFlexible = 0x7fff;

// Ranges stop below each API's first flexible version (except ApiVersions v3, which every current
// client sends first): the clients read here speak those versions, and docs/KAFKA.md §APIs says why
// each range starts where it does.
constexpr std::array<ApiInfo, 20> kApis{{
    {ApiKey::kProduce, "produce", 0, 7, kNotFlexible, handle_produce},
    {ApiKey::kFetch, "fetch", 4, 11, kNotFlexible, handle_fetch},
    {ApiKey::kListOffsets, "list_offsets", 0, 3, kNotFlexible, handle_list_offsets},
    {ApiKey::kMetadata, "metadata", 0, 7, kNotFlexible, handle_metadata},
    {ApiKey::kOffsetCommit, "offset_commit", 0, 7, kNotFlexible, handle_offset_commit},
    {ApiKey::kOffsetFetch, "offset_fetch", 0, 5, kNotFlexible, handle_offset_fetch},
    {ApiKey::kFindCoordinator, "find_coordinator", 0, 2, kNotFlexible, handle_find_coordinator},
    {ApiKey::kJoinGroup, "join_group", 0, 5, kNotFlexible, handle_join_group},
    {ApiKey::kHeartbeat, "heartbeat", 0, 3, kNotFlexible, handle_heartbeat},
    {ApiKey::kLeaveGroup, "leave_group", 0, 3, kNotFlexible, handle_leave_group},
    {ApiKey::kSyncGroup, "sync_group", 0, 3, kNotFlexible, handle_sync_group},
    {ApiKey::kDescribeGroups, "describe_groups", 0, 4, kNotFlexible, handle_describe_groups},
    {ApiKey::kListGroups, "list_groups", 0, 2, kNotFlexible, handle_list_groups},
    {ApiKey::kSaslHandshake, "sasl_handshake", 0, 1, kNotFlexible, handle_sasl_handshake, true},
    {ApiKey::kApiVersions, "api_versions", 0, 3, 3, handle_api_versions},
    {ApiKey::kCreateTopics, "create_topics", 0, 4, kNotFlexible, handle_create_topics},
    {ApiKey::kDeleteTopics, "delete_topics", 0, 3, kNotFlexible, handle_delete_topics},
    {ApiKey::kDeleteRecords, "delete_records", 0, 1, kNotFlexible, handle_delete_records},
    {ApiKey::kDescribeConfigs, "describe_configs", 0, 2, kNotFlexible, handle_describe_configs},
    {ApiKey::kSaslAuthenticate, "sasl_authenticate", 0, 1, kNotFlexible, handle_sasl_authenticate, true},
}};

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
