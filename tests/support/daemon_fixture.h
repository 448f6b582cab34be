// DaemonProcess: the real streamd binary, started for a test on 127.0.0.1 with ephemeral ports
// (port 0, read back from --ready-file) and a data directory in a temp dir, so tests run in parallel
// without colliding. It can stop it (SIGTERM), kill it (SIGKILL), send any signal, and start it again
// on the same data directory. The daemon's stdout and stderr go to log_path(), appended across restarts.
//
// Every wait is bounded (start-up and exit: 10 s by default). The destructor kills a daemon still
// running, and a daemon dies with the test process that started it even when that process crashes
// (PR_SET_PDEATHSIG): start it from a thread that outlives it (the test's own). Only the process this
// object started is ever signalled, by its pid. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace streamd::testing {

class TempDir;

// The ports the daemon's listeners bound, from its ready file; 0 for one it does not run.
struct DaemonPorts {
  uint16_t listen = 0;
  uint16_t http = 0;
  uint16_t kafka = 0;
  uint16_t tls = 0;
  uint16_t http_tls = 0;
  uint16_t kafka_tls = 0;
};

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string body;
};

class DaemonProcess {
 public:
  // `args` are appended to the ones the fixture sets (--data-dir, --listen, --http-listen,
  // --ready-file, --log-level); a later flag wins, so tests may override any of them.
  explicit DaemonProcess(std::vector<std::string> args = {});
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Limits the size of every file the daemon writes (RLIMIT_FSIZE, with SIGXFSZ ignored so a write past
  // it fails with EFBIG instead of killing the process): a disk that refuses writes, for error paths.
  void set_file_size_limit(uint64_t bytes) { file_size_limit_ = bytes; }
  // Later starts listen on the ports the last start bound (protocol, HTTP and Kafka), so that a
  // client that knows one address reaches the daemon again after a restart.
  void keep_ports() { keep_ports_ = true; }

  // The path of the streamd binary: $STREAMD_BINARY, else the one this build produced.
  static std::string binary();

  // Starts the daemon and waits until it listens. False when it exited or did not get ready in time;
  // exit_code() then tells how it ended. The daemon is killed when the thread that started it exits
  // (PR_SET_PDEATHSIG), so start it from a thread that outlives its use.
  bool start(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGTERM and wait for the exit; returns the exit code (-1: not running, or did not exit in time,
  // in which case it is killed).
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap.
  void kill9();
  void signal(int signo);
  // Waits for the process to end on its own; its exit code, or -1 on timeout.
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  uint16_t port() const { return ports_.listen; }
  uint16_t http_port() const { return ports_.http; }
  // The Kafka listener's port; 0 unless the args turn it on (--kafka.listen 127.0.0.1:0).
  uint16_t kafka_port() const { return ports_.kafka; }
  // The TLS listeners' ports; 0 unless the args turn them on (--tls-listen 127.0.0.1:0, …).
  uint16_t tls_port() const { return ports_.tls; }
  uint16_t http_tls_port() const { return ports_.http_tls; }
  uint16_t kafka_tls_port() const { return ports_.kafka_tls; }
  // The exit code of the last run that ended (128 + signal for a signal), nullopt before any.
  std::optional<int> exit_code() const { return exit_code_; }
  const std::string& dir() const;
  const std::string& data_dir() const { return data_dir_; }
  std::string log_path() const;
  std::string log() const;

  // GET http://127.0.0.1:http_port()/path, bounded by 5 s.
  HttpReply http_get(const std::string& path) const;

 private:
  void reap(int status);

  std::unique_ptr<TempDir> dir_;
  std::string data_dir_;
  std::vector<std::string> args_;
  bool keep_ports_ = false;
  pid_t pid_ = -1;
  DaemonPorts ports_;
  std::optional<int> exit_code_;
  uint64_t file_size_limit_ = 0;
};

// A loopback port nothing listens on right now, for a daemon that must come back on the same one or
// a client that must find nobody there.
uint16_t free_port();

// A blocking TCP connection to 127.0.0.1:port with every wait bounded; for wire-level tests.
class TestSocket {
 public:
  explicit TestSocket(uint16_t port);
  ~TestSocket();
  TestSocket(const TestSocket&) = delete;
  TestSocket& operator=(const TestSocket&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool send_all(std::string_view bytes);
  // Ends the sending side (the broker sees EOF), keeping the receiving side open.
  void shutdown_send();
  // Exactly n bytes, or nullopt on EOF, error or timeout.
  std::optional<std::string> read_exact(size_t n,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // One frame body (after the 4-byte big-endian length), or nullopt.
  std::optional<std::string> read_frame(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // True when the peer closed the connection (EOF or reset) within `timeout`, discarding any bytes.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  int fd_ = -1;
};

}  // namespace streamd::testing
