#include "tests/support/pg_cluster.h"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "server/broker/pg/pg_connection.h"
#include "tests/support/text_file.h"

namespace streamd::testing {
namespace {

constexpr const char* kBin = "/usr/lib/postgresql/15/bin";
constexpr const char* kUnprivileged = "nobody";

bool is_root() { return ::geteuid() == 0; }

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace

std::string PgCluster::missing() {
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    if (::access((std::string(kBin) + "/" + tool).c_str(), X_OK) != 0) {
      return std::string("PostgreSQL 15 is not installed (no ") + kBin + "/" + tool + "; scripts/setup installs postgresql-15)";
    }
  }
  if (is_root() && (::getpwnam(kUnprivileged) == nullptr || ::access("/usr/sbin/runuser", X_OK) != 0)) {
    return "running as root with no unprivileged user `nobody` or no runuser to run initdb as";
  }
  return "";
}

std::string PgCluster::as_owner(const std::string& command) const {
  return is_root() ? std::string("runuser -u ") + kUnprivileged + " -- " + command : command;
}

PgCluster::PgCluster(std::vector<std::string> settings) : settings_(std::move(settings)) {
  const std::string why = missing();
  if (!why.empty()) throw std::runtime_error(why);
  char pattern[] = "/tmp/streamd-pg-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  if (is_root()) {
    const passwd* pw = ::getpwnam(kUnprivileged);
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown of " + dir_ + " failed");
  }
  const std::string initdb = as_owner(std::string(kBin) + "/initdb -D " + dir_ +
                                      "/data -U streamd --auth=trust -E UTF8 --no-instructions --no-sync > " + dir_ +
                                      "/initdb.log 2>&1");
  if (std::system(initdb.c_str()) != 0) {
    throw std::runtime_error("initdb failed: " + read_text_file(dir_ + "/initdb.log").value_or(""));
  }
  start();
}

PgCluster::~PgCluster() {
  if (detached_) return;
  if (running_) stop("immediate");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PgCluster::start() {
  // Started again after a stop, it keeps its port: the DSNs handed out stay good.
  const bool again = port_ != 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (!again) port_ = free_port();
    std::string options = "-c port=" + std::to_string(port_) +
                          " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + dir_;
    for (const std::string& s : settings_) options += " -c " + s;
    const std::string command = as_owner(std::string(kBin) + "/pg_ctl -D " + dir_ + "/data -l " + dir_ +
                                         "/server.log -w -t 60 -o '" + options + "' start > /dev/null 2>&1");
    if (std::system(command.c_str()) == 0) {
      running_ = true;
      return;
    }
  }
  throw std::runtime_error("PostgreSQL did not start: " + read_text_file(dir_ + "/server.log").value_or(""));
}

void PgCluster::stop(const std::string& mode) {
  const std::string command =
      as_owner(std::string(kBin) + "/pg_ctl -D " + dir_ + "/data -w -m " + mode + " stop > /dev/null 2>&1");
  (void)std::system(command.c_str());
  running_ = false;
}

std::string PgCluster::dsn(const std::string& db) const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=streamd dbname=" + db + " connect_timeout=10";
}

std::string create_database(const std::string& base_dsn) {
  static std::atomic<int> counter{0};
  const std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  auto conn = PgConnection::connect(base_dsn);
  if (!conn.ok()) throw std::runtime_error(conn.status().to_string());
  if (Status s = (*conn)->run("create database", "CREATE DATABASE " + name); !s.ok()) {
    throw std::runtime_error(s.to_string());
  }
  const std::string key = "dbname=postgres";
  std::string dsn = base_dsn;
  dsn.replace(dsn.find(key), key.size(), "dbname=" + name);
  return dsn;
}

std::string shared_cluster_dsn() {
  if (const char* dir = std::getenv("STREAMD_TEST_PG_DIR")) {
    const std::string dsn = read_text_file(std::string(dir) + "/dsn").value_or("");
    if (dsn.rfind("skip: ", 0) == 0) {
      std::cerr << "SKIPPED: " << dsn.substr(6) << "\n";
      std::exit(77);
    }
    if (!dsn.empty()) return dsn;
  }
  const std::string why = PgCluster::missing();
  if (!why.empty()) {
    std::cerr << "SKIPPED: " << why << "\n";
    std::exit(77);
  }
  static std::unique_ptr<PgCluster> own = std::make_unique<PgCluster>();
  return own->dsn();
}

}  // namespace streamd::testing
