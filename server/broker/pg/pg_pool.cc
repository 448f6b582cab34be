#include "server/broker/pg/pg_pool.h"

namespace streamd {
namespace {

thread_local PgConnection* t_pinned = nullptr;

Status misconfigured(const std::string& field, const std::string& value, const std::string& reason) {
  return Status(Code::kSqlStreamMisconfigured, "the PostgreSQL server would lose acknowledged records",
                {{"field", field}, {"value", value}, {"reason", reason}});
}

}  // namespace

Status check_settings(PgConnection& conn) {
  auto r = conn.exec("check settings",
                     "SELECT current_setting('fsync'), current_setting('synchronous_commit'), "
                     "current_setting('default_transaction_isolation')");
  if (!r.ok()) return r.status();
  const std::string fsync(r->bytes(0, 0));
  const std::string synchronous_commit(r->bytes(0, 1));
  const std::string isolation(r->bytes(0, 2));
  if (fsync != "on") return misconfigured("fsync", fsync, "a commit would not survive a power cut");
  if (synchronous_commit == "off" || synchronous_commit == "local") {
    return misconfigured("synchronous_commit", synchronous_commit,
                         synchronous_commit == "off" ? "COMMIT would return before the commit is on disk"
                                                     : "COMMIT would return before a synchronous standby has it");
  }
  if (isolation != "read committed") {
    return misconfigured("default_transaction_isolation", isolation,
                         "the engine's statements are written for READ COMMITTED");
  }
  return Status();
}

PgPool::Lease::~Lease() {
  if (pool_ && conn_) pool_->give_back(std::move(conn_));
}

PgPool::Pin::Pin(const Lease& lease) : previous_(t_pinned) { t_pinned = &*lease; }
PgPool::Pin::~Pin() { t_pinned = previous_; }

Result<PgPool::Lease> PgPool::acquire() {
  if (t_pinned) return Lease(t_pinned);
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !idle_.empty() || open_ < size_; });
    if (!idle_.empty()) {
      std::unique_ptr<PgConnection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(conn));
    }
    ++open_;
  }
  // Connecting takes a round trip or more: not under the lock.
  auto conn = PgConnection::connect(dsn_, session_);
  Status checked = conn.ok() ? check_settings(**conn) : conn.status();
  if (!checked.ok()) {
    std::lock_guard lock(mu_);
    --open_;
    cv_.notify_one();
    return checked;
  }
  return Lease(this, std::move(conn).value());
}

void PgPool::give_back(std::unique_ptr<PgConnection> conn) {
  std::lock_guard lock(mu_);
  if (conn->broken()) {
    // A lost connection is mostly a server that restarted or failed over, which broke the idle ones
    // too: they go now, rather than each failing one more statement.
    open_ -= 1 + static_cast<unsigned>(idle_.size());
    idle_.clear();
    cv_.notify_all();
  } else {
    idle_.push_back(std::move(conn));
  }
  cv_.notify_one();
}

}  // namespace streamd
