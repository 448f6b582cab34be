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
  if (command == "stop") {
    std::ifstream in(dir + "/cluster");
    std::string cluster;
    std::getline(in, cluster);
    if (cluster.empty()) return 0;
    const std::string prefix = ::geteuid() == 0 ? "runuser -u nobody -- " : "";
    const std::string stop = prefix + "/usr/lib/postgresql/15/bin/pg_ctl -D " + cluster + "/data -w -m fast stop";
    const int rc = std::system(stop.c_str());
    std::filesystem::remove_all(cluster);
    std::filesystem::remove(dir + "/cluster");
    std::filesystem::remove(dir + "/dsn");
    return rc == 0 ? 0 : 1;
  }
  std::cerr << "pg_test_cluster: unknown command " << command << "\n";
  return 64;
}
