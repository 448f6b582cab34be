// The brokers sharing one database, as each broker's rotation of unkeyed appends needs them
// (RotationShare, stream_engine.h; docs/SCALING.md §"Unkeyed appends across brokers").
//
// A broker is a member while one session of its own holds a session-level advisory lock of the
// members' class, keyed by a slot number: the lowest slot free when it joined. PostgreSQL releases the
// lock when the session ends, however it ends (a broker killed, its connection cut), so membership needs
// no heartbeat and no table. pg_locks, which every role may read, lists the slots held; a broker's
// index is its slot's place among them.
//
// Membership only spreads load: two brokers that briefly disagree about it append to the same
// partitions, which the append statement serialises as it always does.
#pragma once

#include <cstdint>

#include "server/broker/pg/pg_connection.h"
#include "server/broker/stream_engine.h"
#include "server/storage/status.h"

namespace streamd::pg_members {

// Takes the lowest free slot on `session`, which must stay open as long as the broker is a member.
// UNAVAILABLE when every slot is taken.
Result<int32_t> join(PgConnection& session);

// This broker's share as the slots held now say; the whole rotation when `slot` is not among them.
Result<RotationShare> share(PgConnection& session, int32_t slot);

}  // namespace streamd::pg_members
