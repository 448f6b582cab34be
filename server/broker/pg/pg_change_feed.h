// What a broker's NOTIFYs on the engine's channel say (docs/ENGINES.md §"Reads, bounds and the other
// brokers"), so that the others learn of its appends without querying the database.
//
// A payload is the sender's tag ("<pid>.<n>": the sender ignores its own) and, after a '|', items
// separated by spaces:
//   h<stream>.<part>.<first>.<next>.<bytes>.<last_at>.<active_base>.<active_bytes>.<active_min_at>.<segments>
//       the head row one of the sender's appends left (its statement's view of it);
//   r   something else changed (a group commit): read everything again (refresh);
//   j   the sender joined the brokers' members: read the members again, and everything.
// A payload with no '|' (a create or delete, sent inside its transaction; or a broker of an older
// version) means r. A receiver takes the heads as they come — the last one per partition wins, and a
// head never moves a partition backwards — and refreshes for r, j and anything it cannot parse;
// its refresh every poll interval corrects whatever a payload's head got wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/broker/pg/pg_partition.h"

namespace streamd::pg_changes {

// NOTIFY payloads must stay under 8000 bytes; a longer list of heads is sent as r instead.
inline constexpr size_t kMaxPayload = 7900;

std::string head_item(int64_t stream_id, int32_t part, const PgHead& head);

// `tag` and `items` as one payload; "<tag>|r" when the items would not fit.
std::string payload(const std::string& tag, const std::vector<std::string>& items);

struct HeadChange {
  int64_t stream_id = 0;
  int32_t part = 0;
  PgHead head;
};

struct Decoded {
  bool refresh = false;  // r, j, a bare tag or something unparsable
  bool joined = false;   // j
  std::vector<HeadChange> heads;
};

// Adds what one payload from another broker says to `out`.
void decode(std::string_view payload, Decoded& out);

}  // namespace streamd::pg_changes
