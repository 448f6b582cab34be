// Runs the streamctl binary of this build as a child process for the integration tests: stdin fed
// from a string, stdout and stderr captured, the exit code returned. Every run is bounded (the child
// is killed by its pid past the timeout). StreamctlProcess keeps a child running (consume --follow)
// so that a test can read its output as it comes and signal it. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace streamd::testing {

struct CtlResult {
  int code = -1;        // exit code; 128 + signal when killed
  long max_rss_kb = 0;  // the child's peak resident memory (VmHWM), as last seen while it ran
  std::string out;
  std::string err;
  std::vector<std::string> lines() const;  // stdout split on '\n', without the last empty piece
};

std::string streamctl_binary();

// streamctl --broker 127.0.0.1:<port> <args...>
CtlResult run_streamctl(uint16_t port, const std::vector<std::string>& args, const std::string& input = "",
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));
// streamctl --broker <broker> <args...>: a broker named other than by 127.0.0.1.
CtlResult run_streamctl(const std::string& broker, const std::vector<std::string>& args,
                        const std::string& input = "", std::chrono::milliseconds timeout = std::chrono::seconds(60));

class StreamctlProcess {
 public:
  // With `open_stdin`, the child's stdin stays open for write_input() until close_input() or the end;
  // otherwise the child sees end of input at once.
  StreamctlProcess(uint16_t port, const std::vector<std::string>& args, bool open_stdin = false);
  ~StreamctlProcess();
  StreamctlProcess(const StreamctlProcess&) = delete;
  StreamctlProcess& operator=(const StreamctlProcess&) = delete;

  // Reads stdout until it holds at least `count` complete lines or `timeout` passes.
  std::vector<std::string> wait_for_lines(size_t count, std::chrono::milliseconds timeout);
  void signal(int signo);
  // Writes to the child's stdin (open_stdin); false when the child stopped reading it.
  bool write_input(std::string_view bytes);
  void close_input();
  // Waits for the exit (bounded), collecting the rest of stdout and stderr.
  CtlResult wait(std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  void pump(int timeout_ms);

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

// Lenient field readers for the one-line JSON objects streamctl prints (its writer's exact shape):
// the string value of "name":"…" (JSON escapes undone) and the integer value of "name":123.
std::string json_string(const std::string& object, const std::string& name);
int64_t json_int(const std::string& object, const std::string& name);
bool json_is_null(const std::string& object, const std::string& name);

}  // namespace streamd::testing
