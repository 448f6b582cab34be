// PgEngine's listener thread: LISTEN/NOTIFY between brokers, and the polling fallback.
//
// One connection of its own (not the pool's: it stays in LISTEN) sends this broker's coalesced NOTIFY
// and receives the others'. The heads another broker's NOTIFY carries are taken as they come
// (pg_change_feed.h); any other notification, and every poll_interval without one, runs refresh(). The first connection LISTENs before open() loads the database, so no change is
// missed between the two. A broken connection is reopened after a poll interval; what was notified
// meanwhile is found by the refresh that follows. With storage.postgres.notify off there is no such
// connection: a refresh every poll_interval is all.
//
// The same connection holds this broker's member slot (pg_members.h): the broker's share of the
// rotation is read again every poll_interval, and is the whole rotation while the connection is down;
// the number of members sets this broker's part of the database's flushes (LimitedExecutor::set_sharers).
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/broker/pg/pg_engine.h"
#include "server/broker/pg/pg_members.h"

namespace streamd {
namespace {

constexpr auto kNotifySpacing = std::chrono::milliseconds(1);

}  // namespace

void PgEngine::join_members(PgConnection& listener, Listening& state) {
  auto slot = pg_members::join(listener);
  if (!slot.ok()) {
    spdlog::warn(
        "postgres engine: cannot join the brokers' members, so this broker's unkeyed appends take "
        "every partition: {}",
        slot.status().to_string());
    return;
  }
  state.slot = *slot;  // members_due is still unset: the first turn reads the share
  state.announce = "j";  // the others read the members at once, and so start notifying this one
}

bool PgEngine::read_members(PgConnection& listener, Listening& state) {
  const auto now = std::chrono::steady_clock::now();
  if (state.slot < 0 || now < state.members_due) return true;
  auto share = pg_members::share(listener, state.slot);
  if (!share.ok()) return false;
  const RotationShare before = share_.exchange(*share, std::memory_order_relaxed);
  // No longer alone: what went unannounced meanwhile is read again by the newcomers.
  if (state.alone && share->count > 1) state.announce = "r";
  state.alone = share->count == 1;
  if (before.index != share->index || before.count != share->count) {
    flushes_.set_sharers(static_cast<size_t>(share->count));
    if (share->count == 1) {
      spdlog::info(
          "postgres engine: no other broker shares the database; unkeyed appends take every partition");
    } else {
      spdlog::info(
          "postgres engine: {} brokers share the database; this one's unkeyed appends take the "
          "partitions p with p % {} == {}",
          share->count, share->count, share->index);
    }
  }
  // Under a stream of notifications the refresh deadline keeps moving; this one does not.
  state.members_due = now + options_.poll_interval;
  return true;
}

bool PgEngine::listen_turn(PgConnection& listener, Listening& state) {
  using Steady = std::chrono::steady_clock;
  if (!read_members(listener, state)) return false;
  const auto now = Steady::now();
  if (now >= state.last_notify + kNotifySpacing && !send_changes(listener, state)) return false;
  // A statement on this connection (the members' reading, the NOTIFY above, LISTEN itself) reads
  // whatever notifications arrived before its answer into libpq's queue, off the socket: poll() would
  // not see them and the wait would run to the deadline, a whole poll interval late. Take them first.
  auto queued = listener.take_notifications(notify_tag_);
  if (!queued.ok()) return false;
  // send_changes drained the pipe, close()'s wake with it: the flag, read after the drain, decides.
  if (stopping()) return true;
  if (queued->empty()) {
    // Within the spacing after a NOTIFY a new signal waits (the pipe is not polled) for at most 1 ms.
    const bool spacing = now < state.last_notify + kNotifySpacing;
    const auto wait =
        spacing ? 1
                : std::max<int64_t>(
                      0, std::chrono::duration_cast<std::chrono::milliseconds>(state.deadline - now).count());
    pollfd fds[2] = {{listener.socket(), POLLIN, 0}, {notifier_.wake_fd(), POLLIN, 0}};
    (void)::poll(fds, spacing ? 1 : 2, static_cast<int>(wait));
  }
  if (stopping()) return true;
  auto notified = listener.take_notifications(notify_tag_);
  if (!notified.ok()) return false;
  pg_changes::Decoded changes;
  for (const std::string& payload : *queued) pg_changes::decode(payload, changes);
  for (const std::string& payload : *notified) pg_changes::decode(payload, changes);
  if (changes.joined) state.members_due = Steady::now();
  if (changes.refresh || Steady::now() >= state.deadline) {
    if (Status s = refresh(); !s.ok()) spdlog::warn("postgres engine: refresh failed: {}", s.to_string());
    state.deadline = Steady::now() + options_.poll_interval;
  } else if (!changes.heads.empty()) {
    apply_heads(changes.heads);  // what the others' appends left: no query
  }
  return true;
}

void PgEngine::idle_interval() {
  const auto deadline = std::chrono::steady_clock::now() + options_.poll_interval;
  for (;;) {
    // Signals of this broker's own appends are dropped: no NOTIFY goes without a listening connection.
    // close()'s wake may go with them: the flag, read after the drain, decides.
    (void)notifier_.take();
    if (stopping()) return;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return;
    pollfd fd{notifier_.wake_fd(), POLLIN, 0};
    (void)::poll(&fd, 1, static_cast<int>(left));
  }
}

Result<std::unique_ptr<PgConnection>> PgEngine::listen() {
  if (!options_.notify) return Status(Code::kUnavailable, "storage.postgres.notify is off");
  auto connected = PgConnection::connect(pool_.dsn(), pool_.session());
  if (!connected.ok()) return connected.status();
  // This session writes nothing but NOTIFYs, which no crash needs to keep (a lost one costs a poll
  // interval): its commits need not wait for a WAL flush, and so take none from the appends'.
  STREAMD_RETURN_IF_ERROR((*connected)->run("listen", "SET synchronous_commit = off"));
  STREAMD_RETURN_IF_ERROR((*connected)->run("listen", std::string("LISTEN ") + kPgChannel));
  return connected;
}

void PgEngine::poll_loop(Result<std::unique_ptr<PgConnection>> listening) {
  using Steady = std::chrono::steady_clock;
  // open() LISTENed (or tried to) before it read everything: on that first connection there is
  // nothing to catch up on; every later one first refreshes what happened while not listening.
  for (bool first = true; !stopping(); first = false) {
    if (!first) listening = listen();
    if (!listening.ok() && options_.notify) {
      spdlog::warn("postgres engine: cannot listen for other brokers' changes, polling only: {}",
                   listening.status().to_string());
    }
    if (!first) {
      if (Status s = refresh(); !s.ok()) spdlog::warn("postgres engine: refresh failed: {}", s.to_string());
    }
    Listening state;
    state.deadline = Steady::now() + options_.poll_interval;
    if (listening.ok()) {
      PgConnection& listener = **listening;
      join_members(listener, state);
      while (!stopping() && listen_turn(listener, state)) {
      }
      // Without the session the slot is gone, and which partitions the others take is unknown. The
      // flushes keep their part: the others are most likely still there, sharing the database.
      share_.store(RotationShare{}, std::memory_order_relaxed);
      if (stopping()) return;
      spdlog::warn("postgres engine: the listening connection broke; reconnecting");
      listening = Status(Code::kUnavailable, "the listening connection broke");  // closes it
    }
    idle_interval();
  }
}

}  // namespace streamd
