// PgCluster: a PostgreSQL 15 of the tests' own — initdb and pg_ctl from /usr/lib/postgresql/15/bin on a
// temp directory, listening on a free loopback port (and a socket in that directory), never a system
// cluster. initdb refuses to run as root, so under root the cluster belongs to the unprivileged user
// `nobody` (runuser). Stopped with pg_ctl, and its directory removed, when the object goes away.
//
// A suite's tests share one cluster through a ctest fixture: `pg_test_cluster start DIR` starts it
// and writes its DSN to DIR/dsn, `pg_test_cluster stop DIR` stops it (pg_cluster_main.cc); each test
// then takes a fresh database of it (create_database).
#pragma once

#include <string>
#include <vector>

namespace streamd::testing {

class PgCluster {
 public:
  // Why this machine cannot run a cluster (no PostgreSQL 15 binaries, no unprivileged user), or "".
  static std::string missing();

  // initdb, then start with `settings` ("fsync=off", …) added as -c options. Throws std::runtime_error
  // with the server's log when it does not start.
  explicit PgCluster(std::vector<std::string> settings = {});
  ~PgCluster();
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;

  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  // A libpq connection string for database `db`.
  std::string dsn(const std::string& db = "postgres") const;

  // Starts the cluster; after a stop() on the port it had.
  void start();
  // pg_ctl stop; `mode` is smart, fast or immediate.
  void stop(const std::string& mode = "fast");
  // Leaves the cluster running when this object goes away (the fixture's start half).
  void detach() { detached_ = true; }

 private:
  std::string as_owner(const std::string& command) const;
  std::string dir_;
  int port_ = 0;
  std::vector<std::string> settings_;
  bool running_ = false;
  bool detached_ = false;
};

// A fresh database on the cluster `base_dsn` names; returns its DSN.
std::string create_database(const std::string& base_dsn);

// The DSN of the suite's shared cluster: $STREAMD_TEST_PG_DIR/dsn when the ctest fixture started one,
// else a cluster this process starts once and stops at exit. Exits 77 (ctest's skip) with the reason
// when the machine cannot run PostgreSQL.
std::string shared_cluster_dsn();

}  // namespace streamd::testing
