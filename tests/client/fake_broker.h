// FakeBroker: a scripted stand-in for streamd in the client's unit tests. It listens on 127.0.0.1
// (ephemeral port), answers Hello itself, and hands every other request to the test's handler, which
// may answer at once, later (send()), or never. It can drop its connections and stop and restart
// listening on the same port, to exercise the client's reconnects. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "streamd.pb.h"

namespace streamd::client::testing {

class FakeBroker {
 public:
  // Returns false to leave the request unanswered (the test may send() an answer later).
  using Handler = std::function<bool(const v1::Request& request, v1::Response* response)>;

  explicit FakeBroker(Handler handler, uint64_t max_frame_bytes = 1 << 20);
  ~FakeBroker();

  uint16_t port() const { return port_; }
  // Sends `response` on the most recently accepted connection.
  void send(const v1::Response& response);
  void drop_connections();
  // Stops listening (connects are refused) and closes every connection; start() listens again on
  // the same port.
  void stop();
  void start();
  int connections_accepted() const { return accepted_.load(); }
  // When set, Hello is answered with this error.
  void refuse_hello(uint32_t code, const std::string& name);
  // The client name and token of the last Hello.
  std::pair<std::string, std::string> last_hello();

 private:
  void accept_loop(int listen_fd);
  void serve(int fd);

  Handler handler_;
  const uint64_t max_frame_bytes_;
  uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::mutex mutex_;
  int listen_fd_ = -1;
  std::vector<int> fds_;
  std::set<int> dropped_;  // shut down: their buffered requests are ignored
  std::vector<std::thread> threads_;
  uint32_t hello_error_code_ = 0;
  std::string hello_error_name_;
  std::pair<std::string, std::string> last_hello_;
};

}  // namespace streamd::client::testing
