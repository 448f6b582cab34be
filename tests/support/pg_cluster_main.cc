// pg_test_cluster start|stop DIR: the ctest fixture that gives a suite one PostgreSQL (pg_cluster.h).
// start writes the DSN to DIR/dsn and the cluster's directory to DIR/cluster, or "skip: reason" to
// DIR/dsn where the machine cannot run PostgreSQL; stop stops the cluster and removes its directory.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/support/pg_cluster.h"

namespace {

// Stops the cluster DIR/cluster names and removes it and the files naming it: 0 when there was none or
// it stopped, 1 when pg_ctl failed.
int stop_named(const std::string& dir) {
  std::ifstream in(dir + "/cluster");
  std::string cluster;
  std::getline(in, cluster);
  if (cluster.empty()) return 0;
  const std::string prefix = ::geteuid() == 0 ? "runuser -u nobody -- " : "";
  // Immediate: the cluster is removed next, so a shutdown checkpoint (which on a busy machine took
  // past a minute of syncs) would write what nobody reads.
  const std::string stop = prefix + "/usr/lib/postgresql/15/bin/pg_ctl -D " + cluster + "/data -w -m immediate stop";
  const int rc = std::system(stop.c_str());
  std::filesystem::remove_all(cluster);
  std::filesystem::remove(dir + "/cluster");
  std::filesystem::remove(dir + "/dsn");
  return rc == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using streamd::testing::PgCluster;
  if (argc != 3) {
    std::cerr << "usage: pg_test_cluster start|stop DIR\n";
    return 64;
  }
  const std::string command = argv[1];
  const std::string dir = argv[2];
  std::filesystem::create_directories(dir);
  if (command == "start") {
    // A cluster an earlier start left behind (a run cut short, or ctest --repeat, which repeats a
    // fixture's setup without its cleanup) is stopped first: nothing else would stop it.
    (void)stop_named(dir);
    if (const std::string why = PgCluster::missing(); !why.empty()) {
      std::ofstream(dir + "/dsn") << "skip: " << why;
      std::cerr << "PostgreSQL tests will be skipped: " << why << "\n";
      return 0;
    }
    try {
      PgCluster cluster;
      cluster.detach();
      std::ofstream(dir + "/dsn") << cluster.dsn();
      std::ofstream(dir + "/cluster") << cluster.dir();
      std::cout << "PostgreSQL on port " << cluster.port() << " in " << cluster.dir() << "\n";
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
    return 0;
  }
  if (command == "stop") return stop_named(dir);
  std::cerr << "pg_test_cluster: unknown command " << command << "\n";
  return 64;
}
