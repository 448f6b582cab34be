// PgEngine: streams, records and group offsets kept in one PostgreSQL database (docs/ENGINES.md §"The
// PostgreSQL engine"), which any number of brokers may share.
//
// open() connects, refuses a server that would lose acknowledged records (check_settings,
// SQL_STREAM_MISCONFIGURED) and creates or checks the schema (pg_schema.h), LISTENs (notify on), then
// loads every stream, head row and group offset. Appends and commits run on the engine's own threads,
// one per pooled connection, because libpq blocks; so do create, delete and the reads, on whatever
// thread calls them (the broker's storage and reader threads, never a network loop). The partitions'
// flushes run a few at a time, as the file engine's do (kStorageRunningLimit), so that each commit
// carries more appends; with other brokers on the database this one runs its part of that limit.
//
// Other brokers' changes reach this one through refresh(): a background thread runs it at every
// NOTIFY on the engine's channel (each broker sends at most one per millisecond after its appends and
// commits committed, outside their transactions; a create or delete sends its own inside its
// transaction) and at least every poll_interval, so a lost notification costs latency, never records.
// A refresh reads the streams table too: streams other brokers created or deleted are opened or closed
// here, a stream whose `meta` another broker changed (alter) takes that policy, and each is named to
// the catalog listener. With notify off the engine neither sends nor listens and
// learns of other brokers' changes by polling alone (a pooler in transaction mode cannot LISTEN).
//
// The listening session also makes this broker a member of the database's brokers (pg_members.h),
// and every poll_interval it reads them again: rotation_share() spreads the unkeyed appends of the
// brokers over different partitions. Without that session (notify off, or while it reconnects) the
// broker's rotation takes every partition.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/broker/pg/pg_change_feed.h"
#include "server/broker/pg/pg_notifier.h"
#include "server/broker/pg/pg_pool.h"
#include "server/broker/pg/pg_txn_store.h"
#include "server/broker/pg/pg_stream.h"
#include "server/broker/stream_engine.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/limited_executor.h"

namespace streamd {

struct PgEngineOptions {
  std::string dsn;
  unsigned pool = 4;  // connections, and the threads that run appends and commits
  std::chrono::milliseconds poll_interval{250};
  bool notify = true;  // LISTEN/NOTIFY between brokers; off: polling alone
  ProducerBounds producers;
  // A statement unanswered this long gives its connection up (PgSession; zero: never).
  std::chrono::milliseconds reply_timeout{30000};
  // An idempotent batch whose commit went unanswered is sent again this long (PgAppendSettings).
  std::chrono::milliseconds resend_unknown_for{20000};
  std::string shard;  // the shard's name when the database is one of several (pg_shards.h), else empty
  // The producer states' bounds and counts to share with other engines (every shard's, pg_shards.h);
  // null: the engine's own, made from `producers`.
  std::shared_ptr<ProducerLimits> shared_producers;
};

class PgEngine final : public StreamEngine, private PgEndWriter {
 public:
  static Result<std::unique_ptr<PgEngine>> open(const PgEngineOptions& options, const Clock& clock);
  // Creates or checks the schema and returns (streamd --init-postgres).
  static Status init_schema(const std::string& dsn);
  ~PgEngine() override;

  const char* kind() const override { return "postgres"; }
  bool durable() const override { return true; }
  uint64_t size_bytes() const override;

  Result<std::shared_ptr<EngineStream>> create(const std::string& name, const Policy& policy) override;
  Status remove(const std::string& name) override;
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit) override;
  Result<std::shared_ptr<EngineStream>> find(const std::string& name) const override;
  std::vector<std::shared_ptr<EngineStream>> list() const override;
  void set_catalog_listener(CatalogListener listener) override;
  RotationShare rotation_share() const override { return share_.load(std::memory_order_relaxed); }
  void close() override;
  Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current) override;
  const ProducerLimits& producers() const override { return *producers_; }
  // Each transactional id's state in a row of its own (pg_txn_store.h): any broker may coordinate it.
  TxnLog* transactions() override { return txns_.get(); }

  // Reads the streams, every head row and group offset again (what other brokers created, deleted,
  // appended and committed), then names the streams that came or went to the catalog listener.
  Status refresh();
  // Whether the last refresh reached the database (one runs at least every poll interval).
  bool reachable() const { return reachable_.load(std::memory_order_relaxed); }

 private:
  PgEngine(const PgEngineOptions& options, const Clock& clock);
  // PgEndWriter: the markers of transactions ending together, one statement per partition in the order
  // of the partitions' names (two brokers' ends lock shared head rows alike), and their offsets.
  Status write_ends(const std::vector<const TxnStore::End*>& ends, std::vector<std::function<void()>>& after) override;
  Status load();
  // The stream this broker holds under `name`, or null.
  std::shared_ptr<PgStream> held(const std::string& name) const;
  std::shared_ptr<PgStream> make_stream(int64_t id, const std::string& name, const std::string& meta,
                                        const std::vector<PgHead>& heads);
  // Opens the streams the database holds and this engine does not, closes the ones it no longer holds
  // (by id: a name deleted and created again is a new stream), gives those whose `meta` changed their
  // new policy. Returns their names; holds catalog_mu_.
  Result<std::vector<std::string>> sync_streams(PgConnection& conn);
  // refresh() but the report: the names of the streams that came or went into `changed`.
  Status reread(std::vector<std::string>& changed);
  void report(const std::vector<std::string>& names);
  // A new connection LISTENing on the engine's channel; UNAVAILABLE with notify off.
  Result<std::unique_ptr<PgConnection>> listen();
  // The listener thread, starting on `listening`: the connection open() LISTENed on before it loaded,
  // or why there is none.
  void poll_loop(Result<std::unique_ptr<PgConnection>> listening);
  // Waits one poll interval, woken early only to stop.
  void idle_interval();
  bool stopping() const { return stopping_.load(); }
  // What one listening connection's turns carry from one to the next.
  struct Listening {
    std::chrono::steady_clock::time_point deadline;     // of the next refresh without a notification
    std::chrono::steady_clock::time_point last_notify;  // this broker's last NOTIFY
    std::chrono::steady_clock::time_point members_due;  // of the next reading of the members
    int32_t slot = -1;                                  // this broker's member slot, -1 when none
    bool alone = false;    // the members read last were this broker alone: nobody needs its NOTIFYs
    std::string announce;  // an item for the next NOTIFY even when alone (pg_change_feed.h: j or r)
  };
  // Sends what the notifier holds as one NOTIFY (pg_change_feed.h), unless nobody listens. False when
  // the connection broke.
  bool send_changes(PgConnection& listener, Listening& state);
  // Takes heads other brokers' NOTIFYs carried; wakes the long polls of partitions that grew.
  void apply_heads(const std::vector<pg_changes::HeadChange>& heads);
  // One turn of poll_loop on `listener` (LISTENing): reads the members when due, sends the pending
  // NOTIFY, waits for another broker's or the poll deadline, and refreshes. False when the connection
  // broke.
  bool listen_turn(PgConnection& listener, Listening& state);
  // Reads this broker's share again when a poll interval has passed since the last reading. False
  // when the connection broke.
  bool read_members(PgConnection& listener, Listening& state);
  // Joins the members on `listener` (the first turn then reads the share); a failure leaves this broker
  // the whole rotation.
  void join_members(PgConnection& listener, Listening& state);

  const PgEngineOptions options_;
  const Clock& clock_;
  // Every NOTIFY this broker sends carries notify_tag_ ("<pid>.<n>"), so that it ignores its own.
  const std::string notify_tag_;
  const std::string notify_sql_;
  PgPool pool_;
  PgNotifier notifier_;
  const std::shared_ptr<ProducerLimits> producers_;
  std::unique_ptr<TxnLog> txns_;  // before threads_: its writes run there, and end with them
  // The partitions' flushes, on threads_ (declared before it, so that its threads have ended when this
  // goes: a flush's last step, starting the next one, runs there).
  LimitedExecutor flushes_;
  ThreadPool threads_;

  // Held by create, alter, remove and sync_streams across their statements, so a refresh never
  // mistakes a create, change or delete in progress here for another broker's.
  std::mutex catalog_mu_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<PgStream>> streams_;
  std::vector<std::string> unreported_;  // changes sync_streams found inside create(), for the next refresh

  std::mutex listener_mu_;  // held while the listener runs
  CatalogListener listener_;

  std::atomic<RotationShare> share_{RotationShare{}};
  std::atomic<bool> reachable_{true};
  // The streams by id, for apply_heads(): filled from streams_ when an id is not found (ids are never
  // reused; a stream deleted since is closed, and a head given to it is harmless). Listener thread only.
  std::map<int64_t, std::weak_ptr<PgStream>> by_id_cache_;

  // Set by close() before it wakes the listener thread. The thread reads it before every wait, not only
  // after one: the wake byte is drained with the notifier's signals, so it may be gone by then.
  std::atomic<bool> stopping_{false};
  std::thread poller_;
};

}  // namespace streamd
