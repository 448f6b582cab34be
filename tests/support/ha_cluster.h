// HaCluster: the high-availability stack of docs/SCALING.md §"High availability", started by a test
// on temp directories and loopback ports: one etcd, and three PostgreSQL 15 nodes run by Patroni with
// synchronous_mode_strict (an acknowledged commit is on two nodes; with no synchronous standby writes
// wait rather than go asynchronous). Debian's etcd-server, patroni and postgresql-15 (scripts/setup).
//
// Everything runs as `nobody` under root (initdb refuses root), and every process is started in a
// directory of the cluster's own, so that it can be stopped by pid even when the test dies: the
// constructor first starts ha_reaper (tests/support/ha_reaper.cc), which kills whatever still runs in
// that directory once the test process ends, however it ends. The destructor stops everything in
// order (Patroni, which stops its PostgreSQL; any postmaster left; etcd), then lets the reaper sweep.
// etcd and Patroni also die with the thread that started them (PR_SET_PDEATHSIG): start the cluster
// from the test's own thread.
//
// Patroni runs with ttl 10 s, loop_wait 1 s and retry_timeout 3 s, so a primary that stops answering
// is replaced within about ttl. It keeps its leader key through etcd's v2 API: Debian 12's Patroni
// (3.0.2) over the v3 API overwrites a promoted node's key once a hung primary wakes
// (docs/SCALING.md §"Patroni"). Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace streamd::testing {

class HaCluster {
 public:
  // Why this machine cannot run the stack (a missing binary, no unprivileged user), or "".
  static std::string missing();

  explicit HaCluster(int nodes = 3);
  ~HaCluster();
  HaCluster(const HaCluster&) = delete;
  HaCluster& operator=(const HaCluster&) = delete;

  int nodes() const { return static_cast<int>(nodes_.size()); }
  const std::string& dir() const { return dir_; }
  // Every node in one libpq string with target_session_attrs=read-write: libpq tries them in order
  // and keeps the one that accepts writes, so a new connection after a failover finds the new primary.
  std::string dsn(const std::string& db = "postgres") const;
  // One node only.
  std::string node_dsn(int node, const std::string& db = "postgres") const;
  std::string node_name(int node) const { return "n" + std::to_string(node); }

  // The node Patroni runs as primary / as synchronous standby now, -1 when none is.
  int primary() const;
  int sync_standby() const;
  // Until there is a primary accepting writes through dsn(), a synchronous standby, and every node's
  // PostgreSQL running; false past `timeout`.
  bool wait_healthy(std::chrono::milliseconds timeout) const;
  // The postmaster of `node` (its data directory's postmaster.pid, checked against /proc), or -1.
  pid_t postmaster(int node) const;
  // Sends `signo` to the node's postmaster; false when it runs none.
  bool signal_postmaster(int node, int signo) const;
  // Sends `signo` to the node's postmaster and every process it forked (its backends, WAL sender,
  // writer, checkpointer): SIGSTOP hangs the whole server with its connections open, as a stalled
  // machine would, where stopping the postmaster alone leaves every open session working.
  bool signal_server(int node, int signo) const;
  // Asks Patroni to hand the primary role from `from` to `to` (a synchronous standby); true when it
  // accepted.
  bool switchover(int from, int to) const;
  // What Patroni's REST API says of the cluster (GET /cluster), for failure messages.
  std::string describe() const;
  // The last `bytes` of node `node`'s Patroni log.
  std::string log_tail(int node, size_t bytes = 4000) const;

 private:
  struct Node {
    int pg_port = 0;
    int api_port = 0;
    pid_t patroni = -1;
  };
  pid_t spawn(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log);
  void start_etcd();
  void start_node(int i);
  std::string node_dir(int i) const { return dir_ + "/" + node_name(i); }
  // The HTTP status of GET path on node i's REST API (0: no answer).
  int api_status(int i, const std::string& path) const;
  void stop_all();

  std::string dir_;
  int reaper_pipe_ = -1;
  pid_t reaper_ = -1;
  int etcd_port_ = 0;
  int etcd_peer_port_ = 0;
  pid_t etcd_ = -1;
  std::vector<Node> nodes_;
};

// A minimal HTTP/1.0 exchange with 127.0.0.1:port: the status (0 when there was no answer within
// `timeout`) and the body.
struct LocalHttpReply {
  int status = 0;
  std::string body;
};
LocalHttpReply local_http(int port, const std::string& method, const std::string& path, const std::string& body = "",
                          std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace streamd::testing
