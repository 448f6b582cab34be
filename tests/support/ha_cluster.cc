#include "tests/support/ha_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "server/broker/pg/pg_connection.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/proc_stat.h"
#include "tests/support/text_file.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";
constexpr const char* kEtcd = "/usr/bin/etcd";
constexpr const char* kPatroni = "/usr/bin/patroni";
constexpr const char* kUnprivileged = "nobody";

bool is_root() { return ::geteuid() == 0; }

// Waits for a child to exit; false past `timeout`.
bool reap(pid_t pid, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// Stops a child: `signo`, then SIGKILL after `grace`.
void stop_child(pid_t pid, int signo, milliseconds grace) {
  if (pid <= 0) return;
  (void)::kill(pid, signo);
  if (!reap(pid, grace)) {
    (void)::kill(pid, SIGKILL);
    (void)reap(pid, std::chrono::seconds(5));
  }
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

LocalHttpReply local_http(int port, const std::string& method, const std::string& path, const std::string& body,
                          milliseconds timeout) {
  LocalHttpReply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return reply;
  const auto deadline = Clock::now() + timeout;
  auto left = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count()));
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string in;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == EINPROGRESS;
  if (ok) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, left()) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  std::string out = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n";
  if (!body.empty()) out += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n" + body;
  for (size_t sent = 0; ok && sent < out.size();) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, left()) != 1) {
      ok = false;
      break;
    }
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) ok = false;
    sent += n > 0 ? static_cast<size_t>(n) : 0;
  }
  while (ok) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left()) != 1) break;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.x NNN ..."
  if (in.size() >= 12 && in.rfind("HTTP/", 0) == 0) {
    reply.status = std::atoi(in.c_str() + 9);
    const size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) reply.body = in.substr(end + 4);
  }
  return reply;
}

std::string HaCluster::missing() {
  for (const std::string& tool : {std::string(kPgBin) + "/initdb", std::string(kPgBin) + "/postgres",
                                 std::string(kPgBin) + "/pg_rewind", std::string(kEtcd), std::string(kPatroni)}) {
    if (::access(tool.c_str(), X_OK) != 0) {
      return "no " + tool + " (scripts/setup installs postgresql-15, etcd-server and patroni)";
    }
  }
  if (is_root() && ::getpwnam(kUnprivileged) == nullptr) return "running as root with no unprivileged user `nobody`";
  if (DaemonProcess::binary().empty()) return "no streamd binary";
  return "";
}

HaCluster::HaCluster(int nodes) : nodes_(static_cast<size_t>(nodes)) {
  const std::string why = missing();
  if (!why.empty()) throw std::runtime_error(why);
  char pattern[] = "/tmp/streamd-ha-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  // The reaper before anything it might have to stop.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const std::string reaper = STREAMD_HA_REAPER;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[0], STDIN_FILENO);  // dup2 clears close-on-exec on the copy
    ::execl(reaper.c_str(), reaper.c_str(), dir_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  reaper_pipe_ = fds[1];
  reaper_ = pid;
  if (pid < 0) throw std::runtime_error("fork failed");
  try {
    if (is_root()) {
      const passwd* pw = ::getpwnam(kUnprivileged);
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown failed");
    }
    start_etcd();
    for (int i = 0; i < nodes; ++i) start_node(i);
  } catch (...) {
    stop_all();
    throw;
  }
}

HaCluster::~HaCluster() { stop_all(); }

pid_t HaCluster::spawn(const std::vector<std::string>& args, const std::string& cwd, const std::string& log) {
  std::filesystem::create_directories(cwd);
  uid_t uid = ::getuid();
  gid_t gid = ::getgid();
  if (is_root()) {
    const passwd* pw = ::getpwnam(kUnprivileged);
    uid = pw->pw_uid;
    gid = pw->pw_gid;
    std::filesystem::permissions(cwd, std::filesystem::perms::owner_all);
    if (::chown(cwd.c_str(), uid, gid) != 0) throw std::runtime_error("chown of " + cwd + " failed");
  }
  // Everything the child needs, built before fork: after it only async-signal-safe calls are made.
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> env_strings = {"PATH=/usr/bin:/bin", "HOME=" + cwd, "LANG=C.UTF-8",
                                                "PYTHONUNBUFFERED=1"};
  std::vector<char*> env;
  for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  const pid_t parent = ::getpid();
  const bool root = is_root();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (out >= 0) {
      if (root) (void)::fchown(out, uid, gid);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    if (root && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    // After the change of user, which clears it: dies with the test's thread.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::execve(argv[0], argv.data(), env.data());
    ::_exit(127);
  }
  const std::string started = proc_stat(pid).value_or(ProcStat{}).start_time;
  std::ofstream(dir_ + "/pids", std::ios::app) << pid << " " << started << "\n";
  return pid;
}

void HaCluster::start_etcd() {
  etcd_port_ = free_port();
  etcd_peer_port_ = free_port();
  const std::string client = "http://127.0.0.1:" + std::to_string(etcd_port_);
  const std::string peer = "http://127.0.0.1:" + std::to_string(etcd_peer_port_);
  const std::string dir = dir_ + "/etcd";
  etcd_ = spawn({kEtcd, "--name", "e0", "--data-dir", dir + "/data", "--listen-client-urls", client,
                 "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", "e0=" + peer, "--initial-cluster-state", "new", "--enable-v2=true",
                 "--log-level", "warn"},
                dir, dir + "/etcd.log");
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (local_http(etcd_port_, "GET", "/health", "", milliseconds(1000)).body.find("true") == std::string::npos) {
    if (Clock::now() > deadline || process_gone(etcd_)) {
      throw std::runtime_error("etcd did not start: " + read_text_file(dir + "/etcd.log").value_or(""));
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

void HaCluster::start_node(int i) {
  Node& node = nodes_[static_cast<size_t>(i)];
  node.pg_port = free_port();
  node.api_port = free_port();
  const std::string dir = node_dir(i);
  std::filesystem::create_directories(dir);
  // ttl ≥ loop_wait + 2 × retry_timeout, as Patroni wants. Parameters under bootstrap.dcs are the
  // cluster's; those under postgresql.parameters this node's.
  std::ostringstream yml;
  yml << "scope: streamd-ha\n"
      << "name: " << node_name(i) << "\n"
      << "log:\n  level: INFO\n"
      << "restapi:\n  listen: 127.0.0.1:" << node.api_port << "\n  connect_address: 127.0.0.1:" << node.api_port
      << "\n"
      << "etcd:\n  host: 127.0.0.1:" << etcd_port_ << "\n"
      << "bootstrap:\n"
      << "  dcs:\n"
      << "    ttl: 10\n    loop_wait: 1\n    retry_timeout: 3\n"
      << "    maximum_lag_on_failover: 1048576\n"
      << "    synchronous_mode: true\n    synchronous_mode_strict: true\n"
      << "    postgresql:\n"
      << "      use_pg_rewind: true\n"
      << "      parameters:\n"
      << "        synchronous_commit: 'on'\n        fsync: 'on'\n        wal_level: replica\n"
      << "        hot_standby: 'on'\n        wal_log_hints: 'on'\n        max_connections: 60\n"
      << "        max_wal_senders: 10\n        max_replication_slots: 10\n        wal_keep_size: 256MB\n"
      << "        shared_buffers: 32MB\n"
      << "  initdb:\n  - encoding: UTF8\n  - auth: trust\n"
      << "postgresql:\n"
      << "  listen: 127.0.0.1:" << node.pg_port << "\n"
      << "  connect_address: 127.0.0.1:" << node.pg_port << "\n"
      << "  data_dir: " << dir << "/data\n"
      << "  bin_dir: " << kPgBin << "\n"
      << "  pgpass: " << dir << "/pgpass\n"
      << "  remove_data_directory_on_rewind_failure: true\n"
      << "  remove_data_directory_on_diverged_timelines: true\n"
      << "  authentication:\n"
      << "    superuser:\n      username: streamd\n      password: streamd\n"
      << "    replication:\n      username: replicator\n      password: replicator\n"
      << "    rewind:\n      username: streamd\n      password: streamd\n"
      << "  parameters:\n    unix_socket_directories: '" << dir << "'\n"
      << "  pg_hba:\n"
      << "  - local all all trust\n"
      << "  - host replication replicator 127.0.0.1/32 trust\n"
      << "  - host all all 127.0.0.1/32 trust\n"
      << "watchdog:\n  mode: 'off'\n";
  std::ofstream(dir + "/patroni.yml") << yml.str();
  node.patroni = spawn({kPatroni, dir + "/patroni.yml"}, dir, dir + "/patroni.log");
}

std::string HaCluster::dsn(const std::string& db) const {
  std::string hosts, ports;
  for (const Node& n : nodes_) {
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1");
    ports += (ports.empty() ? "" : ",") + std::to_string(n.pg_port);
  }
  return "host=" + hosts + " port=" + ports + " user=streamd dbname=" + db +
         " target_session_attrs=read-write connect_timeout=2";
}

std::string HaCluster::node_dsn(int node, const std::string& db) const {
  return "host=127.0.0.1 port=" + std::to_string(nodes_[static_cast<size_t>(node)].pg_port) +
         " user=streamd dbname=" + db + " connect_timeout=2";
}

int HaCluster::api_status(int i, const std::string& path) const {
  return local_http(nodes_[static_cast<size_t>(i)].api_port, "GET", path, "", milliseconds(2000)).status;
}

int HaCluster::primary() const {
  for (int i = 0; i < nodes(); ++i) {
    if (api_status(i, "/primary") == 200) return i;
  }
  return -1;
}

int HaCluster::sync_standby() const {
  for (int i = 0; i < nodes(); ++i) {
    if (api_status(i, "/sync") == 200) return i;
  }
  return -1;
}

bool HaCluster::wait_healthy(milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    bool all_running = true;
    for (int i = 0; i < nodes() && all_running; ++i) all_running = api_status(i, "/health") == 200;
    if (all_running && primary() >= 0 && sync_standby() >= 0) {
      // Patroni's view is a loop behind the databases': ask the primary itself.
      auto conn = PgConnection::connect(dsn(), PgSession{milliseconds(3000), ""});
      if (conn.ok()) {
        auto r = (*conn)->exec("check", "SELECT count(*)::int FROM pg_stat_replication WHERE sync_state = 'sync'");
        if (r.ok() && r->int4(0, 0) >= 1) return true;
      }
    }
    std::this_thread::sleep_for(milliseconds(250));
  }
  return false;
}

pid_t HaCluster::postmaster(int node) const {
  const std::string data = node_dir(node) + "/data";
  std::istringstream in(read_text_file(data + "/postmaster.pid").value_or(""));
  pid_t pid = -1;
  if (!(in >> pid) || pid <= 0) return -1;
  // The file outlives a killed postmaster: the pid is only this node's while that process runs there.
  std::error_code ec;
  const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
  if (ec || cwd.string() != data) return -1;
  return pid;
}

bool HaCluster::signal_postmaster(int node, int signo) const {
  const pid_t pid = postmaster(node);
  return pid > 0 && ::kill(pid, signo) == 0;
}

bool HaCluster::signal_server(int node, int signo) const {
  const pid_t pid = postmaster(node);
  return pid > 0 && signal_with_children(pid, signo);
}

bool HaCluster::switchover(int from, int to) const {
  const std::string body = "{\"leader\": \"" + node_name(from) + "\", \"candidate\": \"" + node_name(to) + "\"}";
  const LocalHttpReply r =
      local_http(nodes_[static_cast<size_t>(from)].api_port, "POST", "/switchover", body, std::chrono::seconds(30));
  return r.status == 200;
}

std::string HaCluster::describe() const {
  for (int i = 0; i < nodes(); ++i) {
    const LocalHttpReply r = local_http(nodes_[static_cast<size_t>(i)].api_port, "GET", "/cluster");
    if (r.status == 200) return r.body;
  }
  return "(no Patroni answered GET /cluster)";
}

std::string HaCluster::log_tail(int node, size_t bytes) const {
  return last_bytes(read_text_file(node_dir(node) + "/patroni.log").value_or(""), bytes);
}

void HaCluster::stop_all() {
  // A SIGSTOPped server would hold up its Patroni's orderly stop.
  for (int i = 0; i < nodes(); ++i) (void)signal_server(i, SIGCONT);
  // Patroni stops its PostgreSQL (fast) on SIGTERM, all nodes at once.
  for (const Node& n : nodes_) {
    if (n.patroni > 0) (void)::kill(n.patroni, SIGTERM);
  }
  for (Node& n : nodes_) {
    if (n.patroni > 0 && !reap(n.patroni, std::chrono::seconds(30))) {
      (void)::kill(n.patroni, SIGKILL);
      (void)reap(n.patroni, std::chrono::seconds(5));
    }
    n.patroni = -1;
  }
  for (int i = 0; i < nodes(); ++i) {
    const pid_t pid = postmaster(i);
    if (pid <= 0) continue;
    (void)::kill(pid, SIGQUIT);  // immediate shutdown
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!process_gone(pid) && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(50));
    if (!process_gone(pid)) (void)::kill(pid, SIGKILL);
  }
  stop_child(etcd_, SIGTERM, std::chrono::seconds(10));
  etcd_ = -1;
  // The reaper sweeps what is left (a backend that outlived its postmaster) and removes the directory.
  if (reaper_pipe_ >= 0) {
    ::close(reaper_pipe_);
    reaper_pipe_ = -1;
  }
  if (reaper_ > 0) {
    (void)reap(reaper_, std::chrono::seconds(40));
    reaper_ = -1;
  }
}

}  // namespace streamd::testing
