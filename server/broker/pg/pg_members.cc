#include "server/broker/pg/pg_members.h"

#include <string>

namespace streamd::pg_members {
namespace {

// pg_try_advisory_lock(int, int) keys: this class of lock ("stmb"; maintenance uses "stma"), and the slot.
constexpr int32_t kMembersLockClass = 0x73746d62;
// More brokers than this over one database share the last one's partitions with it.
constexpr int32_t kSlots = 256;

}  // namespace

Result<int32_t> join(PgConnection& session) {
  for (int32_t slot = 0; slot < kSlots; ++slot) {
    PgParams key;
    key.int4(kMembersLockClass).int4(slot);
    auto taken = session.exec("join members", "SELECT pg_try_advisory_lock($1, $2)::int", key);
    if (!taken.ok()) return taken.status();
    if (taken->int4(0, 0) == 1) return slot;
  }
  return Status(Code::kUnavailable, "every member slot of the database is taken",
                {{"op", "join members"}, {"slots", std::to_string(kSlots)}});
}

Result<RotationShare> share(PgConnection& session, int32_t slot) {
  PgParams key;
  key.int4(kMembersLockClass).int4(slot);
  // A two-int advisory lock shows its keys as classid and objid, with objsubid 2.
  auto held = session.exec("read members",
                           "SELECT (count(*) FILTER (WHERE objid::int8 < $2))::int, count(*)::int, "
                           "(count(*) FILTER (WHERE objid::int8 = $2))::int FROM pg_locks "
                           "WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND classid::int8 = $1 "
                           "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                           key);
  if (!held.ok()) return held.status();
  if (held->int4(0, 2) != 1) return RotationShare{};
  return RotationShare{held->int4(0, 0), held->int4(0, 1)};
}

}  // namespace streamd::pg_members
