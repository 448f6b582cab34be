// LongPollRead: one Read request from arrival to answer (docs/PROTOCOL.md §Read; docs/SEMANTICS.md §9's
// wake-up hint) done on the loop.
//
// It reads at once; it answers at once when wait_ms is 0 or anything came back (entries, a per-cursor
// error, a cursor moved past compaction holes). Otherwise it registers Broker::watch on the named
// partitions and arms one timer for the deadline: no polling, no timer per record. A wake (from a
// storage thread, posted to the loop) re-reads and answers; a wake with nothing to read re-watches
// until the deadline. At the deadline the answer is empty, not an error. The connection keeps it as a
// Waiter, so closing the connection unwatches and cancels it; shutdown answers it at once.
//
// Threading: its state lives on the loop thread. A read that reaches into closed segments, and the
// encoding of its answer, runs on the `readers` executor: records no longer in the page cache are
// waited for there (the log is read through a mapping, so the wait is a page fault), never on the
// loop. A read of the active segments only — the records written last, in the page cache — runs on
// the loop, which keeps a long-poll wake two thread hops shorter. At most one read of a request is
// in flight at a time.
#pragma once

#include <memory>

#include "server/net/connection.h"
#include "server/storage/executor.h"
#include "streamd.pb.h"

namespace asio {
class io_context;
}

namespace streamd {

class Broker;
class NetMetrics;

class LongPollRead {
 public:
  // Answers `request` on `conn`, now or when records arrive or wait_ms passes.
  static void start(asio::io_context& io, Broker& broker, Executor& readers, NetMetrics& metrics,
                    const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                    const v1::ReadRequest& request);
};

}  // namespace streamd
