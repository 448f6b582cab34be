// PgPool: the PostgreSQL engine's connections (storage.postgres.pool of them at most), opened on demand
// and each checked before first use: the engine refuses a database that would acknowledge what it may
// lose (check_settings). A connection that broke is dropped when handed back, and the idle ones with it
// (a restart or failover broke them too); the next caller opens a fresh one, which is how the engine
// follows a failover of a multi-host DSN to the new primary.
//
// acquire() blocks until a connection is free. A thread that holds a connection across nested calls
// (the maintenance passes, which hold an advisory lock on their connection) pins it, and every acquire()
// on that thread gets the pinned one.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/broker/pg/pg_connection.h"

namespace streamd {

// SQL_STREAM_MISCONFIGURED (field named) unless the server keeps what it acknowledges: fsync on,
// synchronous_commit neither off nor local, and READ COMMITTED the default isolation.
Status check_settings(PgConnection& conn);

class PgPool {
 public:
  class Lease {
   public:
    Lease(PgPool* pool, std::unique_ptr<PgConnection> conn) : pool_(pool), conn_(std::move(conn)) {}
    explicit Lease(PgConnection* pinned) : pinned_(pinned) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    PgConnection& operator*() const { return pinned_ ? *pinned_ : *conn_; }
    PgConnection* operator->() const { return pinned_ ? pinned_ : conn_.get(); }

   private:
    PgPool* pool_ = nullptr;
    std::unique_ptr<PgConnection> conn_;
    PgConnection* pinned_ = nullptr;
  };

  // Makes `lease`'s connection the one every acquire() on this thread returns, until destroyed.
  class Pin {
   public:
    explicit Pin(const Lease& lease);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

   private:
    PgConnection* previous_;
  };

  PgPool(std::string dsn, unsigned size, PgSession session = {})
      : dsn_(std::move(dsn)), size_(size), session_(std::move(session)) {}
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  Result<Lease> acquire();
  const std::string& dsn() const { return dsn_; }
  // What every connection of the pool carries (PgConnection::connect), for the engine's own sessions.
  const PgSession& session() const { return session_; }

 private:
  void give_back(std::unique_ptr<PgConnection> conn);

  const std::string dsn_;
  const unsigned size_;
  const PgSession session_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_;
  unsigned open_ = 0;  // idle and leased
};

}  // namespace streamd
