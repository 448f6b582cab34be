// The handlers of the API table, one file per API family (api_versions.cc, metadata.cc, produce.cc,
// fetch.cc, list_offsets.cc, group_apis.cc, offset_apis.cc, group_admin_apis.cc, admin_apis.cc,
// config_apis.cc, cluster_apis.cc, acl_apis.cc, producer_apis.cc, sasl_apis.cc). Each decodes its
// request, answers through request.responder (now or later) and returns false only when the body does
// not parse.
#pragma once

#include <string>

#include "server/kafka/connection.h"

namespace streamd::kafka {

bool handle_api_versions(Request& request);
// An ApiVersions request of a version we do not speak: UNSUPPORTED_VERSION in v0 form, with the
// whole list (the SASL APIs only with `sasl`), so the client can pick a version and ask again.
std::string unsupported_api_versions_answer(int32_t correlation_id, bool sasl);

bool handle_sasl_handshake(Request& request);
bool handle_sasl_authenticate(Request& request);

bool handle_metadata(Request& request);
bool handle_produce(Request& request);
bool handle_fetch(Request& request);
bool handle_list_offsets(Request& request);

bool handle_find_coordinator(Request& request);
bool handle_join_group(Request& request);
bool handle_sync_group(Request& request);
bool handle_heartbeat(Request& request);
bool handle_leave_group(Request& request);
bool handle_list_groups(Request& request);
bool handle_describe_groups(Request& request);

bool handle_offset_commit(Request& request);
bool handle_add_partitions_to_txn(Request& request);
bool handle_add_offsets_to_txn(Request& request);
bool handle_end_txn(Request& request);
bool handle_txn_offset_commit(Request& request);
bool handle_offset_fetch(Request& request);

bool handle_create_topics(Request& request);
bool handle_delete_topics(Request& request);
bool handle_delete_records(Request& request);
bool handle_describe_configs(Request& request);
bool handle_alter_configs(Request& request);
bool handle_incremental_alter_configs(Request& request);
bool handle_create_partitions(Request& request);

bool handle_delete_groups(Request& request);
bool handle_offset_delete(Request& request);

bool handle_describe_cluster(Request& request);
bool handle_describe_log_dirs(Request& request);
bool handle_elect_leaders(Request& request);
bool handle_describe_producers(Request& request);

bool handle_init_producer_id(Request& request);

bool handle_describe_acls(Request& request);
bool handle_create_acls(Request& request);
bool handle_delete_acls(Request& request);

}  // namespace streamd::kafka
